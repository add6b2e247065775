"""Commands of extension versions 1.x of the ironic_alloc API."""

"""Links (``self``/``bookmark``) of the wire resources."""

from wsme import types as wtypes

from ironic_alloc import api


def build_url(resource, resource_args, bookmark=False, base_url=None):
    """The URL of ``resource/resource_args`` under the public URL.

    Bookmarks omit the ``/v1`` prefix, as Ironic's do.
    """
    if base_url is None:
        base_url = api.request.public_url
    template = '%(url)s/%(res)s' if bookmark else '%(url)s/v1/%(res)s'
    template += '%(args)s' if resource_args.startswith('?') else '/%(args)s'
    return template % {'url': base_url.rstrip('/'), 'res': resource,
                       'args': resource_args}


class Link(wtypes.Base):
    """A link representation."""

    href = str
    """The url of a link."""

    rel = str
    """The name of a link."""

    type = str
    """Indicates the type of document/link."""

    @staticmethod
    def make_link(rel_name, url, resource, resource_args, bookmark=False,
                  type=wtypes.Unset):
        href = build_url(resource, resource_args, bookmark=bookmark,
                         base_url=url)
        return Link(href=href, rel=rel_name, type=type)


def make_links(resource, resource_args, url=None):
    """The ``self`` and ``bookmark`` links of one resource."""
    url = url or api.request.public_url
    return [Link.make_link('self', url, resource, resource_args),
            Link.make_link('bookmark', url, resource, resource_args,
                           bookmark=True)]

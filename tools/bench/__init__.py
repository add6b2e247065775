"""A benchmark of node allocation through the Bare Metal HTTP API.

``python -m tools.bench run`` drives any Ironic-compatible endpoint
(microversion 1.79) with concurrent allocation requests and reports
throughput, latency, errors and correctness; ``python -m tools.bench
sweep`` starts fresh ironic_alloc standalone services with growing node
counts and reports how the cost of an allocation scales; ``python -m
tools.bench floor`` measures what the parts every allocation crosses
(HTTP, RPC, database) cost alone with an ironic_alloc configuration.

Modules, one job each:

* ``client``: one keep-alive HTTP connection per thread, Ironic headers,
  error bodies decoded.
* ``phases``: the measured phases (enroll, allocate, delete) run by
  worker threads.
* ``checks``: paged listings and the correctness checks.
* ``stats``: percentiles and summaries.
* ``report``: the stdout tables and the JSON document.
* ``progress``: a dependency-free progress line on stderr.
* ``bulk``: a fast node loader writing to ironic_alloc's own database.
* ``service``: starting and stopping a standalone ironic_alloc service.
* ``floor``: the CPU of the HTTP, RPC and database parts, each alone.
* ``profile``: sampling the service with py-spy, grouped by area.
* ``runner`` and ``sweep``: the two commands; ``cli``: their arguments.

Only ``bulk`` imports ironic_alloc (lazily); everything else uses the
standard library, so ``run`` can be pointed at any Ironic.
"""

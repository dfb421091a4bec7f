"""TP planner: which (model, tensor-parallel size) pairs each serving framework accepts.

Importing this package has no side effects (Bokeh executes it as a separate synthetic package when
``panel serve dashboard`` runs). Submodules:

* :mod:`dashboard.schema`  -- catalog columns and framework ids (pure data)
* :mod:`dashboard.catalog` -- config.json -> normalized record; catalog read/write (pure)
* :mod:`dashboard.hub`     -- the only module that talks to the Hugging Face Hub
* :mod:`dashboard.rules`   -- each framework's real TP checks, verdicts and the validity grid (pure)
* :mod:`dashboard.layout`  -- which heads each rank holds (pure)
* :mod:`dashboard.memory`  -- KV cache and weights per rank, tokens that fit on a GPU (pure)
* :mod:`dashboard.app`     -- the Panel app (``panel serve dashboard`` runs ``dashboard/main.py``)
"""

"""vLLM's context-length refusal (vLLM 0.33.0 ``vllm/config/model.py``): the message and where it is raised.

The derivation of the limit from ``config.json`` is :func:`dashboard.context.derive_limits` (catalog
column ``max_model_len_vllm`` and its source ``max_model_len_vllm_source``). Pure, no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

VLLM_RAISE_SITE = "vllm/config/model.py:2680"
VLLM_RELEASE = "0.33.0"
#: (raise site, release, source URL) of the refusal.
RAISE_SITE_INFO = (VLLM_RAISE_SITE, VLLM_RELEASE,
                   f"https://github.com/vllm-project/vllm/blob/v{VLLM_RELEASE}/vllm/config/model.py#L2680")


def vllm_message(context_len: int, derived: float | int | None, source: str | None) -> str:
    """vLLM's ``ValueError`` text for ``--max-model-len context_len`` above the derived limit ('' when it
    starts or the limit is unknown), exactly as ``_get_and_verify_max_len`` builds it
    (``vllm/config/model.py:2664-2683``, vLLM 0.33.0); raised at :data:`VLLM_RAISE_SITE`."""
    if derived is None or not source or isinstance(derived, bool) or not isinstance(derived, (int, float)) \
            or not context_len > derived:
        return ""
    msg = (f"User-specified max_model_len ({context_len}) is greater than the derived max_model_len "
           f"({source} in model's config.json).")
    warning = ("VLLM_ALLOW_LONG_MAX_MODEL_LEN must be used with extreme caution. If the model uses relative "
               "position encoding (RoPE), positions exceeding derived_max_model_len lead to nan. If the model "
               "uses absolute position encoding, positions exceeding derived_max_model_len will cause a CUDA "
               "array out-of-bounds error.")
    return f"{msg} To allow overriding this maximum, set the env var VLLM_ALLOW_LONG_MAX_MODEL_LEN=1. {warning}"


def context_message(context_len: int, derived: float | None, record: Any) -> str:
    """:func:`vllm_message` for a catalog record whose limit ``derived`` (tokens) was read from
    ``max_model_len_vllm``; its source from ``max_model_len_vllm_source``."""
    src = record.get("max_model_len_vllm_source") if isinstance(record, Mapping) else None
    return vllm_message(context_len, derived, src if isinstance(src, str) and src else None)

"""transformers' knowledge of a ``model_type``, from class attributes only: the ``attribute_map`` entries
that name catalog fields, the class default of ``tie_word_embeddings`` and the ``sub_configs`` names.

Read from the generated snapshot :mod:`dashboard.catalog.tf_snapshot` (``python -m dashboard.catalog
aliases`` regenerates it), so the hot path never imports transformers; the installed transformers is
consulted live only for a type the snapshot lacks (``TP_PLANNER_NO_TRANSFORMERS=1`` disables that).
Config classes are never instantiated and no remote code runs.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path
from typing import Any

from dashboard.atomic import atomic_write_text
from dashboard.catalog.aliases import ALIASES, SAFE_NAME


# ------------------------------------------------------------------------------------------------
# transformers attribute maps (optional, class attributes only)
# ------------------------------------------------------------------------------------------------


@lru_cache(maxsize=1)
def config_mapping() -> Any:
    """transformers' ``CONFIG_MAPPING`` (model_type -> its own config class), or None.

    Importing transformers costs seconds (it pulls in torch), so this runs only for model types that
    are missing from the generated snapshot (:mod:`dashboard.catalog.tf_snapshot`) and only when a core
    field could not be found otherwise. ``TP_PLANNER_NO_TRANSFORMERS=1`` disables it.
    """
    if os.environ.get("TP_PLANNER_NO_TRANSFORMERS"):
        return None
    try:
        from transformers.models.auto.configuration_auto import CONFIG_MAPPING  # type: ignore
    except Exception:
        return None
    return CONFIG_MAPPING


def _class_info(cls: Any) -> dict[str, Any]:
    """What we use from one transformers config class: class attributes only, never an instance."""
    amap = getattr(cls, "attribute_map", None) or {}
    amap = {str(k): str(v) for k, v in dict(amap).items()
            if isinstance(k, str) and isinstance(v, str) and k in ALIASES and k != v}
    tie = getattr(cls, "tie_word_embeddings", None)
    subs = getattr(cls, "sub_configs", None) or {}
    return {
        "attribute_map": amap,
        "tie_word_embeddings": tie if isinstance(tie, bool) else None,
        "sub_configs": sorted(str(k) for k in dict(subs) if isinstance(k, str)),
    }


@lru_cache(maxsize=1)
def live_would_differ() -> bool:
    """True when an installed transformers differs from the one the snapshot was generated from.

    Uses package metadata only (no import). When the versions match, a type absent from the snapshot
    is unknown to the installed transformers as well, so importing it would be wasted seconds.
    """
    if os.environ.get("TP_PLANNER_NO_TRANSFORMERS"):
        return False
    try:
        from importlib.metadata import version

        installed = version("transformers")
    except Exception:
        return False
    try:
        from dashboard.catalog.tf_snapshot import TRANSFORMERS_VERSION
    except Exception:  # pragma: no cover
        return True
    return installed != TRANSFORMERS_VERSION


@lru_cache(maxsize=512)
def live_type_info(model_type: str) -> dict[str, Any] | None:
    """The installed transformers' info for ``model_type`` (as :func:`transformers_type_info`), or None
    when the installed version is the snapshot's (:func:`live_would_differ`), transformers is absent or
    disabled, or it does not know the type. Imports transformers on first use (seconds); cached."""
    if not live_would_differ():
        return None
    mapping = config_mapping()
    if mapping is None:
        return None
    try:
        if model_type not in mapping:
            return None
        return _class_info(mapping[model_type])
    except Exception:
        return None


def transformers_type_info(model_type: str | None, *, live: bool = True) -> dict[str, Any] | None:
    """``{"attribute_map", "tie_word_embeddings", "sub_configs"}`` of transformers' config class for a type.

    Read from the snapshot generated from transformers (:mod:`dashboard.catalog.tf_snapshot`, refreshed by
    ``python -m dashboard.catalog aliases``); for a type the snapshot lacks, from the installed
    transformers when ``live`` (class attributes only: the class is never instantiated, nothing is
    fetched, no remote code). None when unknown, or when the name is not a plain identifier.
    """
    if not model_type or not SAFE_NAME.match(model_type):
        return None
    info = snapshot_info().get(model_type)
    if info is not None:
        return info
    return live_type_info(model_type) if live else None


@lru_cache(maxsize=1)
def snapshot_info() -> dict[str, dict[str, Any]]:
    """``model_type -> info`` from the generated snapshot :mod:`dashboard.catalog.tf_snapshot` (empty when
    it cannot be imported). Cached."""
    try:
        from dashboard.catalog.tf_snapshot import TRANSFORMERS_CONFIG_INFO
    except Exception:  # pragma: no cover - the module ships with the package
        return {}
    return TRANSFORMERS_CONFIG_INFO


def transformers_snapshot() -> tuple[str, dict[str, dict[str, Any]]]:
    """(transformers version, model_type -> info) from the installed transformers (every registered type).

    Raises ImportError when transformers is not installed. Used to (re)generate
    :mod:`dashboard.catalog.tf_snapshot` and by the test that checks the snapshot is current.
    """
    import transformers
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    out: dict[str, dict[str, Any]] = {}
    for mt in list(CONFIG_MAPPING.keys()):
        try:
            cls = CONFIG_MAPPING[mt]
        except Exception:
            continue
        out[mt] = _class_info(cls)
    return transformers.__version__, out


def write_transformers_snapshot(path: str | os.PathLike | None = None) -> Path:
    """Regenerate ``dashboard/catalog/tf_snapshot.py`` from the installed transformers."""
    version, info = transformers_snapshot()
    p = Path(path) if path is not None else Path(__file__).with_name("tf_snapshot.py")
    lines = [
        '"""Generated by ``python -m dashboard.catalog aliases`` from transformers ' + version + ': do not edit.',
        "",
        "For every model_type transformers registers: the ``attribute_map`` entries of its config class that",
        "name catalog fields (canonical -> key stored in config.json), the class default of",
        "``tie_word_embeddings``, and the names of its ``sub_configs``. Read from class attributes only.",
        '"""',
        "",
        f"TRANSFORMERS_VERSION = {version!r}",
        "",
        "TRANSFORMERS_CONFIG_INFO = {",
    ]
    for mt in sorted(info):
        i = info[mt]
        lines.append(f"    {mt!r}: {{'attribute_map': {dict(sorted(i['attribute_map'].items()))!r}, "
                     f"'tie_word_embeddings': {i['tie_word_embeddings']!r}, 'sub_configs': {i['sub_configs']!r}}},")
    lines.append("}")
    text = "\n".join(lines) + "\n"
    return atomic_write_text(p, text)

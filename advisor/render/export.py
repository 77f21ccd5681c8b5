"""The recommendation as a YAML file people can keep, diff and read back (`advisor show recs.yaml`).

The file holds the question (profile name and the model file's sha256, workload, constraints), the
catalog's as-of dates, the assumptions, the ranked options with every field, the Pareto front, the
rejections by reason and, when nothing qualified, the explanation. Written atomically.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from advisor.errors import UserError
from advisor.io import dump_yaml, plain, write_atomic
from advisor.profiler.schema import first_error, short_repr

KIND = "advisor-recommendation"
VERSION = 1


def export_data(rec) -> dict:
    from advisor import __version__
    from advisor.render.output import check_finite

    data = {"kind": KIND, "version": VERSION, "advisor_version": __version__, **plain(rec)}
    check_finite(data)  # never a file holding NaN or infinity (a bug, reported as such)
    return data


def write_export(rec, path: Path) -> Path:
    return write_atomic(Path(path), dump_yaml(export_data(rec)), "--export")


def read_export(path: Path):
    """A Recommendation read back from an export; UserError for anything else."""
    from advisor.io import read_yaml
    from advisor.recommender.model import Recommendation

    data = read_yaml(Path(path), "export")
    if not isinstance(data, dict) or data.get("kind") != KIND:
        raise UserError(
            f"{path}: not an advisor recommendation export (no 'kind: {KIND}')",
            "give a file written by 'advisor recommend --export'",
        )
    if data.get("version") != VERSION:
        raise UserError(
            f"{path}: export version {short_repr(data.get('version'))}, this advisor reads {VERSION}", "re-export it"
        )
    body = {k: v for k, v in data.items() if k not in ("kind", "version", "advisor_version")}
    try:
        return Recommendation.model_validate(body)
    except ValidationError as exc:
        raise UserError(f"{path}: invalid export: {first_error(exc)}", "re-export it") from None

"""Measured against predicted: time real training steps of a model on the local device and estimate the
same step on its calibrated catalog entry (local-cpu, local-<gpu>)."""

from __future__ import annotations

from collections.abc import Callable

from pydantic import BaseModel

from advisor.errors import UserError

PHASES = ("forward", "backward", "optimizer")


class Row(BaseModel):
    phase: str  # forward | backward | optimizer | total
    measured_s: float
    predicted_s: float
    error: float  # (predicted - measured) / measured


class Validation(BaseModel):
    model: str
    device: str  # catalog id of the calibrated device
    batch_size: int
    precision: str
    threads: int | None
    rows: list[Row]


def calibrated_id(catalog, device: str) -> str:
    """The catalog id `advisor calibrate` gives this machine's device; a clear error when there is none."""
    if device == "cpu":
        ident = "local-cpu"
    else:
        import torch

        from advisor.calibration.bench import Measurements
        from advisor.calibration.overlay import device_id

        ident = device_id(Measurements(device="cuda", name=torch.cuda.get_device_name(), threads=1))
    if ident not in catalog.devices:
        raise UserError(
            f"no calibration for this {device.upper() if device == 'cuda' else 'CPU'} ({ident} is not in the catalog)",
            f"run 'advisor calibrate --device {device}' first",
        )
    return ident


def rows(measured: dict[str, float], predicted: dict[str, float]) -> list[Row]:
    out = []
    for phase in (*PHASES, "total"):
        m = measured[phase] if phase != "total" else sum(measured[p] for p in PHASES)
        p = predicted[phase] if phase != "total" else sum(predicted[p] for p in PHASES)
        out.append(Row(phase=phase, measured_s=m, predicted_s=p, error=(p - m) / m if m > 0 else 0.0))
    return out


def validate(
    path,
    device: str = "cpu",
    batch_size: int = 8,
    precision: str = "fp32",
    repeats: int = 7,
    catalog=None,
    hardware: str | None = None,
    tick: Callable[[str], None] = lambda s: None,
) -> Validation:
    """Profile `path` on `device` (counting and timing), estimate it on the calibrated device, compare."""
    import torch

    from advisor import api
    from advisor.profiler.device import resolve_device
    from advisor.profiler.profile import profile_model

    dev = resolve_device(device)
    if dev not in ("cpu", "cuda"):
        raise UserError(f"--device {device}: validate needs a real device (cpu or cuda)")
    catalog = catalog or api.catalog()
    ident = hardware or calibrated_id(catalog, dev)
    prof = profile_model(
        path, batch_size=batch_size, device=dev, precision=precision, warmup=3, repeats=repeats, tick=tick
    )
    est = api.estimate(prof, ident, precision=precision, micro_batch=batch_size, cat=catalog)
    t = prof.timing
    measured = {"forward": t.forward_s, "backward": t.backward_s, "optimizer": t.optimizer_s}
    predicted = {p: est.phases[p].seconds for p in PHASES}
    return Validation(
        model=prof.name,
        device=ident,
        batch_size=batch_size,
        precision=precision,
        threads=torch.get_num_threads() if dev == "cpu" else None,
        rows=rows(measured, predicted),
    )

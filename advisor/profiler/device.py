"""The profiling device: choosing it, checking the precision it can run, and naming it (NVML, catalog)."""

from __future__ import annotations

import contextlib
from typing import Any

from advisor.errors import UserError
from advisor.vocab import PRECISIONS, PROFILE_DEVICES, check_choice


def resolve_device(name: str) -> str:
    import torch

    check_choice(name, PROFILE_DEVICES, "--device")
    if name == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if name == "cuda" and not torch.cuda.is_available():
        raise UserError("--device cuda: no CUDA GPU is available here", "use --device cpu or --device meta")
    return name


def check_precision(precision: str, device: str) -> None:
    import torch

    check_choice(precision, PRECISIONS, "--precision")
    if device == "cpu" and precision == "tf32":
        raise UserError(
            "--precision tf32 needs an NVIDIA GPU (Ampere or newer); the CPU cannot run it",
            "use fp32 or bf16-mixed on the CPU, or --device meta to count for a GPU",
        )
    if device == "cuda":
        major, _ = torch.cuda.get_device_capability()
        if precision in ("tf32", "bf16-mixed", "bf16") and major < 8:
            name = torch.cuda.get_device_name()
            raise UserError(
                f"--precision {precision} needs compute capability 8.0 or newer; {name} has {major}.x",
                "use fp32 or fp16-mixed on this GPU, or --device meta",
            )


def low_dtype(precision: str):
    import torch

    return {"bf16-mixed": torch.bfloat16, "fp16-mixed": torch.float16}.get(precision)


@contextlib.contextmanager
def matmul_precision(precision: str, device: str):
    """tf32 on for --precision tf32, off otherwise (so fp32 means fp32), restored afterwards."""
    import torch

    if device != "cuda":
        yield
        return
    old = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    on = precision == "tf32"
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = on
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = old


def nvml_info(index: int = 0):
    """The GPU as NVML sees it (None when NVML is unavailable)."""
    from advisor.profiler.schema import NvmlInfo

    try:
        import pynvml
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
        h = pynvml.nvmlDeviceGetHandleByIndex(index)
        name = pynvml.nvmlDeviceGetName(h)
        mem = pynvml.nvmlDeviceGetMemoryInfo(h)
        info = NvmlInfo(
            name=name.decode() if isinstance(name, bytes) else name,
            memory_total_bytes=float(mem.total),
            memory_used_bytes=float(mem.used),
            sm_clock_max_mhz=float(pynvml.nvmlDeviceGetMaxClockInfo(h, pynvml.NVML_CLOCK_SM)),
            memory_clock_max_mhz=float(pynvml.nvmlDeviceGetMaxClockInfo(h, pynvml.NVML_CLOCK_MEM)),
            driver_version=_text(pynvml.nvmlSystemGetDriverVersion()),
        )
    except Exception:  # noqa: BLE001 - NVML is extra evidence; its absence is not an error
        return None
    with contextlib.suppress(Exception):
        import torch

        info.sm_count = torch.cuda.get_device_properties(index).multi_processor_count
    return info


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def cpu_name() -> str:
    with contextlib.suppress(OSError):
        for line in open("/proc/cpuinfo", encoding="utf-8"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    import platform

    return platform.processor() or platform.machine()


def match_catalog(name: str, catalog: Any) -> str | None:
    """The catalog device id that `name` (an NVML or CPU model name) is, or None when unsure."""
    import re

    from advisor.catalog.lookup import find_device
    from advisor.errors import UserError as _UE

    candidates = [name, re.sub(r"^(NVIDIA|AMD|Intel\(R\)|Tesla)\s+", "", name, flags=re.I)]
    for query in candidates:
        with contextlib.suppress(_UE):
            return find_device(catalog, query).id
    return None


def catalog_id(name: str) -> str | None:
    try:
        from advisor.catalog.load import load_catalog

        return match_catalog(name, load_catalog())
    except Exception:  # noqa: BLE001 - matching is optional: an unknown device keeps catalog_device empty
        return None

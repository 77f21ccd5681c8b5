"""Bytes read and written per op (what FlopCounterMode does not count at all, and a roofline needs), and the
out-of-memory mapping of advisor/profiler/model_file.py, tested with fake exceptions (no GPU here)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from advisor.errors import UserError
from advisor.profiler.counter import Counter
from advisor.profiler.model_file import OOM_HINT, call_user, is_oom

aten = torch.ops.aten
M = "meta"


def calls(fn) -> tuple[dict[str, tuple[float, int, int]], int]:
    """Per aten op: (FLOPs, bytes read, bytes written) summed over calls; and the number of view calls."""
    c = Counter()
    with c:
        fn()
    keys = list(c.keys)
    out: dict[str, tuple[float, int, int]] = {}
    for index, f, r, w in c.calls:
        name = keys[index][0]
        a = out.get(name, (0.0, 0, 0))
        out[name] = (a[0] + f, a[1] + r, a[2] + w)
    return out, c.view_ops


def test_matmul_reads_both_operands_and_writes_the_result():
    a = torch.empty(64, 128, device=M, dtype=torch.bfloat16)
    b = torch.empty(128, 32, device=M, dtype=torch.bfloat16)
    got, _ = calls(lambda: aten.mm(a, b))
    # read 2 bytes * (64*128 + 128*32) = 2 * 12288 = 24576; written 2 * 64*32 = 4096; FLOPs 2*64*128*32
    assert got["aten.mm"] == (524288, 24576, 4096)


def test_views_cost_no_bytes_and_are_not_listed():
    x = torch.empty(8, 16, device=M)
    got, views = calls(lambda: (x.t(), x.view(16, 8), x[2:]))
    assert got == {} and views == 3


def test_gather_reads_only_the_rows_it_picks():
    table = torch.empty(1000, 16, device=M)
    idx = torch.empty(4, 8, device=M, dtype=torch.int64)
    got, _ = calls(lambda: aten.embedding(table, idx))
    # written 32 rows * 16 * 4 B = 2048; read the same rows 2048 + the indices 32 * 8 B = 256 -> 2304
    # (not the whole 64,000-byte table)
    assert got["aten.embedding"][1:] == (2304, 2048)


def test_bag_lookup_reads_each_picked_row_not_the_table():
    table = torch.empty(50_000, 32, device=M)  # 6,400,000 B: a DLRM-style table
    idx = torch.empty(64, device=M, dtype=torch.int64)  # 16 bags of 4
    offsets = torch.empty(16, device=M, dtype=torch.int64)
    got, _ = calls(lambda: aten._embedding_bag(table, idx, offsets, False, 0, False, None, False, -1))
    # written (the meta kernel's outputs): 16 * 32 * 4 B = 2048 + offset2bag 64 * 8 = 512 + bag sizes 16 * 8 = 128
    # + max indices 0 -> 2688; read: 64 rows * 32 * 4 B = 8192 + the indices 64 * 8 = 512 + the offsets 16 * 8 = 128
    # -> 8832 (not the whole 6,400,000-byte table)
    assert got["aten._embedding_bag"][1:] == (8832, 2688)


def test_broadcast_operand_is_read_once():
    x = torch.empty(64, 128, device=M)
    bias = torch.empty(128, device=M).expand(64, 128)  # stride 0 along rows
    got, _ = calls(lambda: aten.add(x, bias))
    # read 64*128*4 = 32768 + the bias once 128*4 = 512 -> 33280; written 32768; one add per element 8192
    assert got["aten.add"] == (8192, 33280, 32768)


def test_in_place_foreach_writes_its_first_list():
    ts = [torch.empty(10, device=M), torch.empty(20, device=M)]
    got, _ = calls(lambda: torch._foreach_mul_(ts, 0.5))
    # 30 fp32 elements read and written in place: 120 bytes each way, one multiply each
    assert got["aten._foreach_mul_"] == (30, 120, 120)


@pytest.mark.parametrize(
    "exc,oom",
    [
        (torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB"), True),
        (RuntimeError("CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 79.15 GiB total capacity)"), True),
        (RuntimeError("[enforce fail at alloc_cpu.cpp:114] DefaultCPUAllocator: can't allocate memory"), True),
        (MemoryError(), True),
        (RuntimeError("mat1 and mat2 shapes cannot be multiplied (8x8 and 12x4)"), False),
        (ValueError("out of memory"), False),  # only RuntimeError/MemoryError come from allocators
    ],
)
def test_is_oom(exc, oom):
    assert is_oom(exc) is oom


def test_call_user_maps_oom_to_one_actionable_line(tmp_path):
    def boom():
        raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")

    with pytest.raises(UserError) as info:
        call_user(boom, Path(tmp_path / "m.py"), "forward pass", batch_size=64, device="cuda")
    assert info.value.message == "out of memory on cuda at batch size 64 (forward pass)"
    assert info.value.hint == OOM_HINT and "--device meta" in OOM_HINT and "smaller --batch-size" in OOM_HINT


def test_a_cpu_tensor_in_a_meta_run_names_the_fix(tmp_path):
    """A meta tensor meeting a CPU one, either way round (torch: "Tensor on device cpu is not on the expected device
    meta!" and the reverse), gets the hint on the meta device and only there; other errors get none."""
    from advisor.profiler.model_file import META_HINT

    x = torch.ones(4, device="meta")
    for op in (lambda: x + torch.ones(4), lambda: torch.ones(4) + x):
        with pytest.raises(UserError) as info:
            call_user(op, Path(tmp_path / "m.py"), "the forward pass", device="meta")
        assert info.value.hint == META_HINT and "device=x.device" in META_HINT and "--device cpu" in META_HINT
        with pytest.raises(UserError) as info:
            call_user(op, Path(tmp_path / "m.py"), "the forward pass", device="cpu")
        assert info.value.hint is None
    with pytest.raises(UserError) as info:
        call_user(lambda: torch.ones(2, device="meta").view(3), Path(tmp_path / "m.py"), "x", device="meta")
    assert info.value.hint is None  # a shape error on meta: not a device mix


def test_allocations_are_memory_but_no_kernel():
    """torch.empty and empty_like only allocate: no op is recorded (no kernel, no bytes moved)."""
    x = torch.empty(64, 128, device=M)
    got, _ = calls(lambda: (aten.empty([64, 128], device=M), aten.empty_like(x), aten.add(x, x)))
    # only the add: read 2 · 64·128·4 = 65536, written 32768
    assert set(got) == {"aten.add"} and got["aten.add"][1:] == (65536, 32768)


def test_dropout_on_meta_is_one_fused_kernel_as_on_cuda():
    """Under the meta emulation, F.dropout in training runs CUDA's one native_dropout kernel (not the CPU path's
    empty_like, bernoulli_, div_ and mul): bf16 [64, 128] reads 64·128·2 = 16384 B and writes the output
    16384 B plus a bool mask 8192 B = 24576 B."""
    import torch.nn.functional as F

    from advisor.profiler.meta_modes import MetaMode

    x = torch.empty(64, 128, device=M, dtype=torch.bfloat16)

    def run():
        with MetaMode(None):
            F.dropout(x, 0.1, True)
            F.dropout(x, 0.1, False)  # evaluation: no kernel

    got, _ = calls(run)
    assert set(got) == {"aten.native_dropout"}
    assert got["aten.native_dropout"][1:] == (16384, 24576)


def test_dropout_on_a_cpu_draws_its_mask_in_place_as_the_calibration_times_it():
    """On a CPU tensor F.dropout takes torch's CPU path: the mask drawn in place with bernoulli_ (fp32 [256]:
    read 1024 B and written 1024 B, no FLOPs), then div_ and mul. The calibration's case for that draw is counted
    the same, so its curve prices the profiled op: 2048 B a call, 1024 of them written."""
    import torch.nn.functional as F

    from advisor.calibration import ops

    x = torch.randn(256)
    got = ops._counted(lambda: F.dropout(x, 0.1, True))
    assert [op for op, *_ in got] == ["aten.bernoulli_", "aten.div_", "aten.mul"]
    assert got[0][1:] == (0.0, 2048.0, 1024.0)
    case = dict(ops._cases("cpu"))["aten.bernoulli_"]
    assert ops._counted(case(256)) == [("aten.bernoulli_", 0.0, 2048.0, 1024.0)]


def test_transposed_convolutions_are_marked_in_the_profile(tmp_path):
    """A ConvTranspose2d's forward and backward records carry transposed=True (the estimator prices them on their
    own curves), a Conv2d's none. Upsampling 8 -> 4 channels, 2x2 stride 2, on a 5x5 input: per sample 2 FLOPs x 25
    input pixels x 8·4·2·2 weights = 6,400, + the bias on 4 x 10 x 10 outputs = 6,800 forward; its backward (the
    input needs no gradient) the weight gradient's 6,400 and the bias gradient's 400."""
    from advisor.profiler.profile import profile_model

    path = tmp_path / "up.py"
    path.write_text(
        "import torch\nfrom torch import nn\n"
        "def build_model():\n    return nn.Sequential(nn.ConvTranspose2d(8, 4, 2, 2), nn.Conv2d(4, 4, 3, padding=1))\n"
        "def example_batch(n):\n    return torch.randn(n, 8, 5, 5)\n"
        "def training_step(model, batch):\n    return model(batch).mean()\n"
    )
    prof = profile_model(path, batch_size=2, device="meta", precision="fp32", repeats=0)
    convs = {(o.op, "[8, 4, 2, 2]" in o.shapes): o for o in prof.ops if o.op.startswith("aten.convolution")}
    assert {k: o.transposed for k, o in convs.items()} == {
        ("aten.convolution", True): True,
        ("aten.convolution", False): None,
        ("aten.convolution_backward", True): True,
        ("aten.convolution_backward", False): None,
    }
    assert convs["aten.convolution", True].flops.per_sample == 6800
    assert convs["aten.convolution_backward", True].flops.per_sample == 6800

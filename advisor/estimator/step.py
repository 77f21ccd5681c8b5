"""The step time of layouts: what estimate.py and the layout search both evaluate (numpy arrays over layouts).

    step = m · T_max + bubble + exposed PP + exposed DP + optimizer
    T_s  = blocks_s · (fwd + bwd + recompute + TP + exposed CP) [+ embedding] [+ head and loss]

per micro-batch on pipeline stage s (T_max the slowest stage). The per-block forward and backward come from the
profile's ops under the layout (passes.py); each parallel dimension adds its own traffic (parallel/*.py).
"""

from __future__ import annotations

import numpy as np

from advisor.estimator.comm import p2p_time
from advisor.estimator.layout import Layout
from advisor.estimator.parallel import context, data, pipeline, tensor
from advisor.estimator.setup import Setup

RECOMPUTE_CODES = ("none", "selective", "full")


def adjust_passes(passes: dict, level, fused) -> dict:
    """The passes as the layout runs them. Shardings that keep 16-bit weights (ZeRO-1/2: the optimizer's fp32
    master is the only fp32 copy; FSDP: weights are gathered in the compute dtype) run without autocast's
    forward casts of the weights, which only DDP over fp32 weights does on every micro-batch. The blocks'
    elementwise ops keep the share `fused` (the family's `fused_elementwise`) of their eager time."""
    sixteen = np.asarray(level) >= 1
    out = {}
    for what, sums in passes.items():
        sums = dict(sums)
        for region in ("before", "block", "after"):
            cast = sums.get((f"cast-{region}", "forward"))
            if cast is not None:
                sums[(region, "forward")] = sums[(region, "forward")] - np.where(sixteen, cast, 0.0)
        if what != "flops":
            for phase in ("forward", "backward"):
                saved = (1.0 - np.asarray(fused)) * sums[("elementwise", phase)]
                sums[("block", phase)] = sums[("block", phase)] - saved
        out[what] = sums
    return out


def layout_arrays(setup: Setup, layout: Layout, m: int) -> dict:
    """One layout as the arrays `step_arrays` and `memory_arrays` take (the search passes many at once)."""
    one = lambda v: np.asarray([v])  # noqa: E731
    return {
        "tp": one(layout.tp),
        "pp": one(layout.pp),
        "vpp": one(layout.vpp),
        "cp": one(layout.cp),
        "dp": one(layout.dp),
        "level": one(data.LEVEL[layout.sharding]),
        "sp": one(layout.sequence_parallel),
        "rec": one(RECOMPUTE_CODES.index(layout.recompute)),
        "m": one(m),
        "stages": tuple(one(x) for x in pipeline.stage_shape(setup.blocks, layout.pp)),
    }


def _p2p(nbytes, n, stride, fabric):
    """p2p_time over arrays (seconds of one send)."""
    return data.Groups(n, stride, fabric).time("p2p", lambda f, n_, s_: (p2p_time(1.0, n_, s_, f)[0], 0.0), nbytes)[0]


def step_arrays(setup: Setup, lay: dict, micro, passes: dict) -> dict:
    """Step time and its parts per layout. `passes` holds pass_times sums at each layout's (micro, tp, cp, sp)."""
    s, blocks = passes["seconds"], setup.blocks
    tp, pp, vpp, cp, dp, m, rec = (lay[k] for k in ("tp", "pp", "vpp", "cp", "dp", "m", "rec"))
    n_first, n_mid, n_last = lay["stages"]
    bf, bb = s[("block", "forward")] / blocks, s[("block", "backward")] / blocks
    cf, cb = s[("core", "forward")] / blocks, s[("core", "backward")] / blocks
    ef, eb, hf, hb = (
        s[("before", "forward")],
        s[("before", "backward")],
        s[("after", "forward")],
        s[("after", "backward")],
    )
    recompute = np.where(rec == 2, bf, np.where(rec == 1, cf if setup.has_scores else 0.0, 0.0))
    st, width, fabric = setup.structure, setup.compute_width, setup.fabric
    tp_blk = cp_blk = cp_tot = tp_msg = np.zeros(np.shape(tp))
    if st is not None and st.hidden and st.seq_len:
        tp_msg = micro * st.seq_len / cp * st.hidden * width  # b·s·h of one all-reduce
        ar = sum(data._group("all_reduce", tp_msg, tp, 1, fabric))
        tp_blk = np.where(tp > 1, np.where(rec == 2, 6, 4) * ar * (1.0 - setup.tp_overlap), 0.0)
        if st.heads:
            step = _p2p(context.kv_chunk_bytes(st, micro, cp, tp, width), cp, tp, fabric)
            cp_tot, cp_blk = context.ring(step, cp, cf, cb, rec == 2)
    per_block = bf + bb + recompute + tp_blk + cp_blk

    def stage(n, first, last):
        return n * per_block + first * (ef + eb) + last * (hf + hb)

    single = pp == 1
    t_first, t_mid, t_last = stage(n_first, 1, single), stage(n_mid, 0, 0), stage(n_last, single, 1)
    t_all = stage(blocks, 1, 1)
    busy, bubble = pipeline.step_parts(t_first, t_mid, t_last, t_all, pp, vpp, m)
    slow = np.where(single, 0, np.argmax(np.stack([t_first, t_mid, t_last]), axis=0))  # the stage that sets the pace
    n_slow = np.choose(slow, [n_first, n_mid, n_last])
    is_first, is_last = (slow == 0), (slow == 2) | single
    fwd = n_slow * bf + is_first * ef + is_last * hf
    bwd = n_slow * bb + is_first * eb + is_last * hb
    # pipeline sends
    msg = (micro * (st.seq_len or 0) / cp * (st.hidden or 0) * width / np.where(lay["sp"], tp, 1)) if st else 0.0
    t_p2p = _p2p(msg, pp, tp * cp * dp, fabric) if st else np.zeros(np.shape(tp))
    pp_exposed = np.where(single, 0.0, 2 * (pp - 1) * vpp * t_p2p)
    pp_total = np.where(single, 0.0, 2 * m * vpp * t_p2p + pp_exposed)
    # data parallelism on the slowest stage's parameters
    psi = tensor.device_parameters(setup.params, tp, blocks, n_slow, is_first, is_last)
    psi_train = psi * setup.train_share
    replicas = dp * cp
    dpc = data.traffic(
        psi, psi_train, lay["level"], replicas, tp, m, fwd, bwd + n_slow * recompute, setup.widths, fabric, pp
    )
    opt_full = s[("optimizer", "optimizer")]
    opt_share = data.optimizer_share(psi_train, setup.profile.trainable_parameters, lay["level"], replicas)
    optimizer = opt_full * opt_share
    parts = {
        "forward": m * fwd,
        "backward": m * bwd,
        "recompute": m * n_slow * recompute,
        "tp": m * n_slow * tp_blk,
        "cp": m * n_slow * cp_blk,
        "bubble": bubble,
        "pp": pp_exposed,
        "dp": dpc["exposed_s"],
        "optimizer": optimizer,
    }
    step = busy + bubble + pp_exposed + dpc["exposed_s"] + optimizer
    return {
        "step": step,
        "parts": parts,
        "slow": slow,
        "n_slow": n_slow,
        "opt_share": opt_share,
        "comm": {
            "tp": (m * n_slow * tp_blk, m * n_slow * tp_blk),
            "cp": (m * n_slow * cp_tot, m * n_slow * cp_blk),
            "pp": (pp_total, pp_exposed),
            "dp": (dpc["total_s"], dpc["exposed_s"]),
        },
        "dp": dpc,
        "bytes": {
            "tp": np.where(tp > 1, m * n_slow * np.where(rec == 2, 6, 4) * tp_msg, 0.0),
            "cp": m
            * n_slow
            * np.where(cp > 1, 3 * np.maximum(cp - 1, 0), 0)
            * (context.kv_chunk_bytes(st, micro, cp, tp, width) if st and st.heads else 0.0),
            "pp": np.where(single, 0.0, 2 * m * vpp * msg),
            "dp": dpc["bytes"],
        },
    }

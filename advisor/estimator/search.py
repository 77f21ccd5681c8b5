"""The layout search: every valid parallel layout of a profile on a set of instances, evaluated at once.

For each node count the search enumerates
- tp: 1 and the divisors of the attention heads that also divide the fast domain (so a tensor-parallel group
  never leaves its NVLink/ICI domain), with sequence parallelism on (in this model it never costs more: the
  same traffic as the all-reduces, less memory and less work);
- cp: 1 and the powers of two up to 32 that divide the sequence into chunks of at least 1,024 tokens (ring
  attention hides each step's KV transfer behind the attention over one chunk: shorter chunks cannot, which
  is why context parallelism is a long-sequence technique);
- pp: the stage counts that divide what tp·cp leave of the devices, no more than the blocks, whose slowest
  stage holds at most 25 % more blocks than the average (pp "dividing or nearly dividing" the blocks), with
  vpp = 1 and every chunk count up to 4 that splits the blocks evenly (when the batch per replica allows the
  interleaved schedule's micro-batch count, a multiple of pp);
- dp: the rest, which must divide the global batch; every sharding (none, zero1, zero2, fsdp) when there
  are replicas; every recomputation (selective only where the attention keeps score matrices);
- the micro-batch: the largest divisor of the batch per replica (global batch / dp, else the profile's
  batch) that fits, and under a pipeline the next two smaller ones too (a smaller bubble).

Model-parallel sizes M = tp·cp·pp beyond twice the smallest one that fits without full recomputation and with
at most ZeRO-1 are left out (Narayanan et al. 2021, takeaway 2: model parallelism as far as memory needs,
data parallelism beyond); `exhaustive=True` keeps them.

Everything a layout's time and memory need that does not depend on pp, vpp, dp, sharding or recomputation
(the per-op passes at each micro-batch, tp and cp) is computed once per (micro-batch, tp, cp) and the layouts
are combined arithmetically over numpy arrays by the estimator's own `step_arrays` and `memory_arrays`, the
functions `estimate()` runs for one layout (tests check the two agree). Layouts of every instance and
precision searched together share one pass through them (advisor/estimator/setup.stack).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from advisor.estimator.layout import Layout, divisors
from advisor.estimator.memory import memory_arrays
from advisor.estimator.parallel import pipeline
from advisor.estimator.passes import KEYS, pass_times
from advisor.estimator.setup import Setup, model_flops, stack, stack_columns
from advisor.estimator.step import adjust_passes, step_arrays
from advisor.vocab import SHARDINGS

MAX_CP = 32
MIN_CP_CHUNK = 1024
STAGE_IMBALANCE = 1.25
# More interleaved chunks always shrink the bubble in this model, whose point-to-point cost counts only the
# fill and drain sends; each chunk also adds a send per micro-batch that real schedules do not fully hide,
# so the search stops at 4 chunks per stage.
MAX_VPP = 4
RECOMPUTES = ("none", "selective", "full")


@dataclass
class Found:
    """Evaluated layouts (arrays, one entry per layout × micro-batch); `setup` says which of the setups
    searched each one belongs to."""

    setup: np.ndarray
    nodes: np.ndarray
    tp: np.ndarray
    pp: np.ndarray
    vpp: np.ndarray
    cp: np.ndarray
    dp: np.ndarray
    micro: np.ndarray
    m: np.ndarray
    level: np.ndarray
    rec: np.ndarray
    step: np.ndarray
    memory: np.ndarray
    fits: np.ndarray
    mfu: np.ndarray
    layouts: int = 0  # distinct layouts (tp, pp, vpp, cp, dp, sharding, recomputation) × node counts evaluated

    def __len__(self) -> int:
        return len(self.step)

    def layout(self, i: int) -> Layout:
        return Layout(
            tp=int(self.tp[i]),
            pp=int(self.pp[i]),
            vpp=int(self.vpp[i]),
            cp=int(self.cp[i]),
            dp=int(self.dp[i]),
            sharding=SHARDINGS[int(self.level[i])],
            sequence_parallel=bool(self.tp[i] > 1),
            recompute=RECOMPUTES[int(self.rec[i])],
        )


COLUMNS = ("setup", "nodes", "tp", "pp", "vpp", "cp", "dp", "micro", "m", "level", "rec")
FIELDS = (*COLUMNS, "step", "memory", "fits", "mfu")


def recomputations(setup: Setup) -> list[int]:
    """Recomputation choices (0 none, 1 selective, 2 full): full only where blocks repeat, selective only where
    the attention keeps score matrices it could drop."""
    if setup.structure is None:
        return [0]
    return [0, 2] + ([1] if setup.has_scores else [])


def _stage_counts(blocks: int, pp: int) -> bool:
    return pp <= blocks and max(pipeline.stage_blocks(blocks, pp)) <= STAGE_IMBALANCE * blocks / pp


def layouts(setup: Setup, world: int, global_batch: int | None) -> list[tuple[int, int, int, int, int]]:
    """(tp, cp, pp, vpp, dp) of every valid layout of `world` devices (see the module docstring)."""
    st = setup.structure
    domain = setup.fabric.domain
    blocks = setup.blocks
    tps, cps = [1], [1]
    if st is not None and st.heads and st.hidden:
        tps += [t for t in divisors(st.heads) if 1 < t <= domain and domain % t == 0 and world % t == 0]
        if st.seq_len and st.attention:
            cps += [c for c in (2**k for k in range(1, 6)) if st.seq_len % c == 0 and st.seq_len // c >= MIN_CP_CHUNK]
    out = []
    for tp in tps:
        for cp in cps:
            if world % (tp * cp):
                continue
            rest = world // (tp * cp)
            for pp in divisors(rest):
                if pp > 1 and (st is None or not _stage_counts(blocks, pp)):
                    continue
                dp = rest // pp
                if global_batch is not None and global_batch % dp:
                    continue
                per_replica = global_batch // dp if global_batch else setup.profile.batch_size
                vpps = [1]
                if pp > 1 and blocks % pp == 0 and per_replica % pp == 0:  # interleaving: m a multiple of pp
                    vpps += [v for v in divisors(blocks // pp) if 1 < v <= MAX_VPP]
                out += [(tp, cp, pp, v, dp) for v in vpps]
    return out


def _bases(setups: list[Setup], counts: list[list[int]], global_batch: int | None, cache: dict) -> np.ndarray:
    """(setup, nodes, tp, pp, vpp, cp, dp, batch per replica) of every layout but its sharding and
    recomputation, one row each."""
    parts = []
    for k, (setup, node_counts) in enumerate(zip(setups, counts, strict=True)):
        for nodes in node_counts:
            world = setup.fabric.per_node * nodes
            key = ("layouts", id(setup.structure), setup.fabric.domain, world, global_batch)
            base = cache.get(key)
            if base is None:
                found = layouts(setup, world, global_batch)
                base = cache[key] = np.asarray(
                    [
                        (tp, pp, vpp, cp, dp, global_batch // dp if global_batch else setup.profile.batch_size)
                        for tp, cp, pp, vpp, dp in found
                    ],
                    dtype=np.int64,
                ).reshape(-1, 6)
            if len(base):
                parts.append(np.column_stack([np.full(len(base), k), np.full(len(base), nodes), base]))
    return np.concatenate(parts) if parts else np.zeros((0, 8), dtype=np.int64)


def _choices(bases: np.ndarray, levels: range, recs: list[int]) -> np.ndarray:
    """Each base row × each sharding (none only without replicas) × each recomputation: the layout rows
    (setup, nodes, tp, pp, vpp, cp, dp, batch per replica, level, rec)."""
    choices = np.asarray([(level, rec) for level in levels for rec in recs], dtype=np.int64)
    alone = choices[choices[:, 0] == 0]  # no replicas: nothing to shard
    several = bases[:, 6] * bases[:, 5] > 1
    parts = []
    for mask, opts in ((several, choices), (~several, alone)):
        chosen = bases[mask]
        if len(chosen) and len(opts):
            parts.append(np.hstack([np.repeat(chosen, len(opts), axis=0), np.tile(opts, (len(chosen), 1))]))
    return np.concatenate(parts) if parts else np.zeros((0, 10), dtype=np.int64)


def _with_micro(rows: np.ndarray, micro) -> np.ndarray:
    """Layout rows (batch per replica in column 7) at micro-batch `micro`: the COLUMNS."""
    micro = np.broadcast_to(np.asarray(micro, dtype=np.int64), (len(rows),))
    return np.column_stack([rows[:, :7], micro, np.maximum(rows[:, 7] // micro, 1), rows[:, 8:]])


def _lay(setup: Setup, rows: np.ndarray) -> tuple[dict, np.ndarray]:
    _k, _nodes, tp, pp, vpp, cp, dp, micro, m, level, rec = rows.T
    stages = np.asarray([pipeline.stage_shape(setup.blocks, p) for p in range(1, int(pp.max()) + 1)])
    lay = {
        "tp": tp,
        "pp": pp,
        "vpp": vpp,
        "cp": cp,
        "dp": dp,
        "level": level,
        "sp": tp > 1,
        "rec": rec,
        "m": m,
        "stages": tuple(stages[pp - 1, k] for k in range(3)),
    }
    return lay, micro


def _memory(setups: list[Setup], rows: np.ndarray, columns: dict | None = None) -> np.ndarray:
    lay, micro = _lay(setups[0], rows)
    return memory_arrays(stack(setups, rows[:, 0], columns), lay, micro)["total_bytes"]


def _model_parallel_cap(setups: list[Setup], bases: np.ndarray, columns: dict) -> np.ndarray:
    """Per base row, whether its model-parallel size M = tp·cp·pp is at most twice the smallest M that fits on
    the same setup and node count at micro-batch 1 without full recomputation, with at most ZeRO-1 sharding
    and without interleaving. Where no such layout fits, every M stays."""
    size = bases[:, 2] * bases[:, 3] * bases[:, 5]
    light = _choices(bases[bases[:, 4] == 1], range(2), [r for r in recomputations(setups[0]) if r < 2])
    if not len(light):
        return np.ones(len(bases), dtype=bool)
    fits = _memory(setups, _with_micro(light, 1), columns) <= columns["capacity"][light[:, 0]]
    group = bases[:, 0] * (1 << 20) + bases[:, 1]
    groups, index = np.unique(group, return_inverse=True)
    smallest = np.full(len(groups), np.iinfo(np.int64).max)
    light_group = np.searchsorted(groups, light[:, 0] * (1 << 20) + light[:, 1])
    np.minimum.at(smallest, light_group[fits], (light[:, 2] * light[:, 3] * light[:, 5])[fits])
    return size <= np.where(smallest[index] == np.iinfo(np.int64).max, size, 2 * smallest[index])


def _micro_batches(rows: np.ndarray, m1: np.ndarray, m2: np.ndarray, capacity: np.ndarray, max_micro: int):
    """Rows with their micro-batches: the largest divisor of the batch per replica that fits (memory is linear
    in the micro-batch with the most micro-batches in flight, so the line through 1 and 2 bounds it), and
    under a pipeline also the next two smaller ones (more micro-batches, a smaller bubble). The interleaved
    schedule needs the micro-batches per step to be a multiple of pp, so its micro-batch divides P/pp. A
    layout that does not fit even at 1 is kept at its smallest micro-batch, to say how far it is from fitting."""
    slope = m2 - m1
    room = np.floor((capacity - m1) / np.where(slope > 0, slope, 1.0)) + 1
    room = np.where(np.isfinite(room), room, max_micro)
    limit = np.where(slope > 0, np.clip(room, 1, max_micro), max_micro).astype(np.int64)
    per = np.where(rows[:, 4] > 1, rows[:, 7] // rows[:, 3], rows[:, 7])  # what the micro-batch must divide
    index_parts, micro_parts = [], []
    for value in np.unique(per):
        where = np.flatnonzero(per == value)
        divs = np.asarray(divisors(int(value)), dtype=np.int64)
        top = np.clip(np.searchsorted(divs, limit[where], side="right") - 1, 0, None)
        for back in range(3):
            pick = top - back
            ok = pick >= 0 if back == 0 else (pick >= 0) & (rows[where, 3] > 1)
            index_parts.append(where[ok])
            micro_parts.append(divs[pick[ok]])
    index = np.concatenate(index_parts)
    return _with_micro(rows[index], np.concatenate(micro_parts))


def _passes(setups: list[Setup], rows: np.ndarray, cache: dict | None) -> dict:
    """pass_times sums per row: computed once per distinct (op table, micro-batch, tp, cp), then gathered."""
    whats = ("seconds", "compute_s", "memory_s", "overhead_s", "flops")
    table_ids = [id(s.table) for s in setups]
    distinct = list(dict.fromkeys(table_ids))
    table_of = np.asarray([distinct.index(t) for t in table_ids])[rows[:, 0]]
    # (table, micro, tp, cp) packed into one integer, each field as wide as its largest value needs
    bits = [max(1, int(rows[:, c].max()).bit_length()) for c in (7, 2, 5)]
    if sum(bits) + max(1, len(distinct).bit_length()) > 62:
        raise ValueError(f"search: micro-batches, tp and cp too large to index together ({bits} bits)")
    b_micro, b_tp, b_cp = bits
    code = (((table_of << b_micro) | rows[:, 7]) << b_tp | rows[:, 2]) << b_cp | rows[:, 5]
    present, index = np.unique(code, return_inverse=True)
    blocks = {w: [] for w in whats}
    for t, table_id in enumerate(distinct):
        mine = present[(present >> (b_micro + b_tp + b_cp)) == t]
        if not mine.size:
            continue
        table = setups[table_ids.index(table_id)].table
        micro = (mine >> (b_tp + b_cp)) & ((1 << b_micro) - 1)
        tp, cp = (mine >> b_cp) & ((1 << b_tp) - 1), mine & ((1 << b_cp) - 1)
        key = ("search-passes", table_id, mine.tobytes())
        passes = cache.get(key) if cache is not None else None
        if passes is None:
            passes = pass_times(table, micro, tp, cp, tp > 1)
            if cache is not None:
                cache[key] = passes
        for w in whats:
            blocks[w].append(np.stack([passes[w][k] for k in KEYS], axis=1))
    out = {}
    for w in whats:
        gathered = np.concatenate(blocks[w])[index]
        out[w] = {k: gathered[:, j] for j, k in enumerate(KEYS)}
    return out


CHUNK_ROWS = 20_000  # layouts per vectorized pass: small enough for the arrays to stay in cache


def search_many(
    setups: list[Setup],
    counts: list[list[int]],
    global_batch: int | None,
    cache: dict | None = None,
    max_micro: int = 1 << 20,
    exhaustive: bool = False,
) -> Found:
    """Every layout × sharding × recomputation of each setup (one profile on several instances and
    precisions) on its node counts, at its best micro-batches, evaluated in passes of about CHUNK_ROWS."""
    cache = cache if cache is not None else {}
    columns = stack_columns(setups)
    bases = _bases(setups, counts, global_batch, cache)
    if not exhaustive and len(bases):
        bases = bases[_model_parallel_cap(setups, bases, columns)]
    parts, start = [], 0
    per_base = 4 * len(recomputations(setups[0]))
    while start < len(bases):
        stop = min(len(bases), start + max(1, CHUNK_ROWS // per_base))
        parts.append(_evaluate(setups, bases[start:stop], cache, max_micro, columns))
        start = stop
    if not parts:
        return _empty()
    found = Found(*(np.concatenate([getattr(p, f) for p in parts]) for f in FIELDS))
    found.layouts = sum(p.layouts for p in parts)
    return found


def _evaluate(setups: list[Setup], bases: np.ndarray, cache: dict, max_micro: int, columns: dict) -> Found:
    layouts_ = _choices(bases, range(4), recomputations(setups[0]))
    if not len(layouts_):
        return _empty()
    m1 = _memory(setups, _with_micro(layouts_, 1), columns)  # the most micro-batches in flight: one sample each
    m2 = _memory(setups, _with_micro(layouts_, np.minimum(2, np.maximum(layouts_[:, 7], 1))), columns)
    capacity = columns["capacity"][layouts_[:, 0]]
    rows = _micro_batches(layouts_, m1, m2, capacity, max_micro)
    batch = stack(setups, rows[:, 0], columns)
    lay, micro = _lay(setups[0], rows)
    step = step_arrays(batch, lay, micro, adjust_passes(_passes(setups, rows, cache), lay["level"], batch.fused))[
        "step"
    ]
    memory = memory_arrays(batch, lay, micro)["total_bytes"]
    fixed, per_sample = setup_flops(setups[0])
    nodes, dp, m = rows[:, 1], rows[:, 6], rows[:, 8]
    mfu = (fixed + per_sample * micro) * m * dp / (step * batch.fabric.per_node * nodes * batch.peak)
    return Found(*(rows[:, k] for k in range(11)), step, memory, memory <= batch.capacity, mfu, layouts=len(layouts_))


def search(setup: Setup, node_counts: list[int], global_batch: int | None, cache: dict | None = None, **kw) -> Found:
    """The layouts of one setup on its node counts (see search_many)."""
    return search_many([setup], [node_counts], global_batch, cache, **kw)


def setup_flops(setup: Setup) -> tuple[float, float]:
    """The model's forward + backward FLOPs per micro-batch as fixed + per-sample parts."""
    a, b = model_flops(setup, 1), model_flops(setup, 2)
    return 2 * a - b, b - a


def _empty() -> Found:
    z = np.zeros(0, dtype=np.int64)
    f = np.zeros(0)
    return Found(z, z, z, z, z, z, z, z, z, z, z, f, f, np.zeros(0, dtype=bool), f)


def best(found: Found) -> dict[tuple[int, int], int]:
    """For each (setup, node count), the index of the fastest layout that fits (ties: the least memory)."""
    out: dict[tuple[int, int], int] = {}
    fit = np.flatnonzero(found.fits)
    if not fit.size:
        return out
    order = fit[np.lexsort((found.memory[fit], found.step[fit], found.nodes[fit], found.setup[fit]))]
    keys = found.setup[order] * (1 << 20) + found.nodes[order]
    first = np.concatenate([[True], keys[1:] != keys[:-1]])
    for i in order[first]:
        out[(int(found.setup[i]), int(found.nodes[i]))] = int(i)
    return out


def best_per_nodes(found: Found) -> dict[int, int]:
    """For each node count (one setup), the index of the fastest layout that fits."""
    return {nodes: i for (_k, nodes), i in best(found).items()}

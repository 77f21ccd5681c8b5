"""What a training step faults in from the OS on a CPU: glibc malloc's main arena replayed over the step's
tensor allocations.

PyTorch's CPU allocator calls malloc and free for every tensor, and glibc hands memory back to the OS in two
ways: a block at or above the mmap threshold is mapped on its own and unmapped when freed, and free space at
the top of the heap beyond the trim threshold is released with sbrk. Either way the next step that needs the
memory faults it in again, page by page, at the OS's first-touch rate (a few GB/s a thread): for an
embedding-heavy model that is most of its step. What comes back depends on the order and sizes of every
allocation since the process started, so it is replayed rather than guessed: `trace` records the tensor
allocations of a fresh model's build and first steps (torch.profiler's memory events, each named by the training
phase it ran in), `steady_faults` replays them through `Arena` and returns the median bytes a steady-state step
faults in and each phase's share of them.

`Arena` follows glibc 2.26+ (malloc/malloc.c) for large blocks: 16-byte chunks with an 8-byte header; best-fit
reuse of free chunks, coalesced with free neighbours, then the top chunk while it has room; only a request that
neither can hold and that is at or above `mmap_threshold` (128 KiB when a process starts) is mapped on its own;
freeing a mapped chunk raises the threshold to its size (up to 32 MiB on 64-bit systems) and the trim threshold to
twice that; a free that leaves the top chunk at or above the trim threshold and
frees at least 64 KiB (FASTBIN_CONSOLIDATION_THRESHOLD) releases all of the top but `top_pad` (128 KiB). Not
modelled: the per-thread caches and fast bins of small chunks, other arenas, and the allocations that are
not tensors (Python objects, oneDNN's scratch space), which can keep the heap's top in use and so fault less.

A replay starts where the process that times a step stands when it builds the model (`process_threshold`): not at
glibc's 128 KiB, since reading the model file has mapped and unmapped a 4 MiB buffer by then.
"""

from __future__ import annotations

import contextlib
import os
import statistics
import sys
from collections.abc import Callable, Iterable

PAGE = 4096
KIB, MIB = 1 << 10, 1 << 20
MMAP_THRESHOLD_MAX = 32 * MIB  # DEFAULT_MMAP_THRESHOLD_MAX on 64-bit: 4 MiB x sizeof(long)
CONSOLIDATION = 64 * KIB  # FASTBIN_CONSOLIDATION_THRESHOLD
MINSIZE = 32  # the smallest chunk: the top must keep this much when a block is split off it
DEFAULT_THRESHOLD = 128 * KIB  # DEFAULT_MMAP_THRESHOLD_MIN and DEFAULT_TRIM_THRESHOLD
BYTES_HEADER = 33  # CPython asks malloc for n + 33 bytes for a bytes object of n (its header and trailing NUL)


def _up(x: int, a: int) -> int:
    return (x + a - 1) // a * a


class Arena:
    """glibc's main arena, enough of it to count the bytes of pages a sequence of malloc/free faults in."""

    def __init__(
        self, mmap_threshold: int = DEFAULT_THRESHOLD, trim_threshold: int = DEFAULT_THRESHOLD, top_pad: int = 128 * KIB
    ):
        self.mmap_threshold, self.trim_threshold, self.top_pad = mmap_threshold, trim_threshold, top_pad
        self.free_chunks: dict[int, int] = {}  # start -> size, not counting the top chunk
        self.free_ends: dict[int, int] = {}  # end -> start of the same free chunks
        self.used: dict[int, int] = {}  # start -> size of heap chunks in use
        self.mapped: dict[int, int] = {}  # handle -> size of chunks mapped on their own
        self.top = 0  # start of the top chunk: the heap's free end
        self.brk = 0  # end of the heap
        self.resident = 0  # heap bytes below this have been touched since they were last released
        self.faulted = 0  # bytes of pages faulted in so far
        self._handles = 0

    def malloc(self, n: int) -> int:
        """A handle for a new block of `n` bytes, assumed written in full (a tensor's storage). As glibc's
        _int_malloc: a free chunk that fits (the best), else the top chunk while it holds the block and MINSIZE more,
        and only then (sysmalloc) a mapping of its own for a block at or above the mmap threshold, else a grown heap.
        A large block therefore reuses heap memory that is free rather than being mapped afresh."""
        nb = max(MINSIZE, _up(n + 8, 16))
        best = None
        for start, size in self.free_chunks.items():
            if size >= nb and (best is None or size < best[1] or (size == best[1] and start < best[0])):
                best = (start, size)
        if best is not None:
            start, size = best
            self._unlink(start)
            if size - nb >= MINSIZE:
                self._link(start + nb, size - nb)
                size = nb
            self.used[start] = size
            self._touch(start + size)
            return start
        if self.brk - self.top < nb + MINSIZE:
            if nb >= self.mmap_threshold:
                size = _up(nb + 8, PAGE)
                self.faulted += size
                self._handles -= 1
                self.mapped[self._handles] = size
                return self._handles
            self.brk += _up(nb - (self.brk - self.top) + self.top_pad, PAGE)
        start, self.top = self.top, self.top + nb
        self.used[start] = nb
        self._touch(start + nb)
        return start

    def free(self, handle: int) -> None:
        if handle in self.mapped:
            size = self.mapped.pop(handle)
            if self.mmap_threshold < size <= MMAP_THRESHOLD_MAX:  # glibc's dynamic threshold
                self.mmap_threshold, self.trim_threshold = size, 2 * size
            return
        start = handle
        size = freed = self.used.pop(start)
        if start + size in self.free_chunks:  # coalesce with the next chunk
            size += self._unlink(start + size)
        if start in self.free_ends:  # and with the previous one
            prev = self.free_ends[start]
            size += self._unlink(prev)
            start = prev
        if start + size != self.top:
            self._link(start, size)
            return
        self.top = start
        if freed >= CONSOLIDATION and self.brk - self.top >= self.trim_threshold:
            extra = (self.brk - self.top - self.top_pad - 33) // PAGE * PAGE
            if extra > 0:
                self.brk -= extra
                self.resident = min(self.resident, self.brk)

    def _touch(self, end: int) -> None:
        if end > self.resident:
            self.faulted += _up(end, PAGE) - _up(self.resident, PAGE)
            self.resident = _up(end, PAGE)

    def _link(self, start: int, size: int) -> None:
        self.free_chunks[start] = size
        self.free_ends[start + size] = start

    def _unlink(self, start: int) -> int:
        size = self.free_chunks.pop(start)
        del self.free_ends[start + size]
        return size


def process_threshold() -> int:
    """glibc's mmap threshold in the process that times a step (`advisor validate`'s, benchmarks/accuracy.py's) when
    it builds the model, in bytes. Reading the model file (advisor.io.read_bytes) ends with a read that finds the
    end of the file: CPython asks for a READ_CHUNK-byte bytes object, above the threshold `import torch` leaves
    (0.5-1 MiB on the development VM), so glibc maps it on its own, and frees it empty, which raises the threshold
    to the block's mapped size and the trim threshold to twice that: 4,198,400 bytes for the 4 MiB chunk (measured
    there after load_model_file: a 3.5 MiB malloc comes from the heap, a 4.1 MiB one is mapped)."""
    from advisor.io import READ_CHUNK

    arena = Arena()
    arena.free(arena.malloc(READ_CHUNK + BYTES_HEADER))
    return arena.mmap_threshold


def replay_phases(events: Iterable[tuple], marks: list[int], mmap_threshold: int | None = None) -> list[dict[str, int]]:
    """Bytes faulted in by each step of an allocation trace, by phase: `events` are (address, +size) for an
    allocation and (address, -size) for a free, in order, optionally with a third item naming the training phase
    the event ran in ("" by default); `marks` the index of each step's first event (what comes before the first
    mark, the model's build, faults too but belongs to no step). The arena starts at `mmap_threshold` (the trim
    threshold twice that, or both glibc's 128 KiB), by default `process_threshold()`."""
    events = list(events)
    start = process_threshold() if mmap_threshold is None else mmap_threshold
    # raised once (as by freeing a mapped block) the trim threshold is twice the mmap threshold; at the start both are
    # glibc's default
    arena = Arena(start, 2 * start if start > DEFAULT_THRESHOLD else DEFAULT_THRESHOLD)
    live: dict[int, int] = {}
    out: list[dict[str, int]] = []
    bounds = [*marks, len(events)]
    for k, (begin, end) in enumerate(zip([0, *marks], bounds, strict=False)):
        step: dict[str, int] = {}
        for address, size, *phase in events[begin:end]:
            before = arena.faulted
            if size > 0:
                live[address] = arena.malloc(size)
            elif address in live:
                arena.free(live.pop(address))
            if arena.faulted > before:
                key = phase[0] if phase else ""
                step[key] = step.get(key, 0) + arena.faulted - before
        if k:
            out.append(step)
    return out


def replay(events: Iterable[tuple], marks: list[int], mmap_threshold: int | None = None) -> list[int]:
    """Bytes faulted in by each step of an allocation trace (see `replay_phases`)."""
    return [sum(step.values()) for step in replay_phases(events, marks, mmap_threshold)]


def steady_faults(
    events: Iterable[tuple], marks: list[int], mmap_threshold: int | None = None
) -> tuple[float, dict[str, float]]:
    """(median bytes a steady-state step faults in, each phase's share of them): the steps after the first (which
    creates the optimizer's state), or the only step there is (see `replay_phases`)."""
    steps = replay_phases(events, marks, mmap_threshold)
    steady = steps[1:] or steps
    if not steady:
        return 0.0, {}
    total = float(statistics.median(sum(step.values()) for step in steady))
    by_phase = {p: statistics.median(step.get(p, 0) for step in steady) for p in sorted({p for s in steady for p in s})}
    whole = sum(by_phase.values())
    return total, ({p: v / whole for p, v in by_phase.items() if v > 0} if whole > 0 else {})


def faulted_bytes(events: Iterable[tuple], marks: list[int], mmap_threshold: int | None = None) -> float:
    """Median bytes a steady-state step faults in (see `steady_faults`)."""
    return steady_faults(events, marks, mmap_threshold)[0]


def phase(name: str):
    """The range that names the training phase (forward, backward, optimizer) for `trace`."""
    import torch

    return torch.profiler.record_function(f"advisor.phase.{name}")


@contextlib.contextmanager
def _quiet_stderr():
    """Sends file descriptor 2 to /dev/null for the duration (C++ libraries write there directly)."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def trace(build: Callable[[], Callable[[], object]], steps: int = 4) -> tuple[list[tuple[int, int, str]], list[int]]:
    """(events, marks) of a fresh model's build (`build()`, which returns one training step on the CPU) and
    `steps` calls of that step, from torch.profiler's memory events; each event names the phase it ran in, from
    the step's `advisor.phase.<name>` record_function ranges (see `phase`)."""
    import bisect

    import torch
    from torch._C._profiler import _EventType

    marker, phase_marker = "advisor.step", "advisor.phase."
    # quiet: kineto prints a line to the process's stderr as it starts and stops, and c10 one for a block freed
    # that was allocated before; the model's own warnings showed when it was counted
    with (
        _quiet_stderr(),
        torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], profile_memory=True) as prof,
    ):
        step = build()
        for i in range(steps):
            with torch.profiler.record_function(f"{marker}{i}"):
                step()
    timed: list[tuple[int, int, int]] = []
    starts: dict[int, int] = {}
    phases: list[tuple[int, str]] = []

    def walk(node) -> None:
        if node.tag == _EventType.Allocation:
            timed.append((node.start_time_ns, node.extra_fields.ptr, node.extra_fields.alloc_size))
        elif node.name.startswith(phase_marker):
            phases.append((node.start_time_ns, node.name[len(phase_marker) :]))
        elif node.name.startswith(marker):
            starts[int(node.name[len(marker) :])] = node.start_time_ns
        for child in node.children:
            walk(child)

    for root in prof.profiler.kineto_results.experimental_event_tree():
        walk(root)
    timed.sort()
    phases.sort()
    times, phase_starts = [t for t, _, _ in timed], [t for t, _ in phases]
    marks = [bisect.bisect_left(times, starts[i]) for i in sorted(starts)]

    def phase_at(t: int) -> str:  # the phase that began last before t ("" before any)
        i = bisect.bisect_right(phase_starts, t) - 1
        return phases[i][1] if i >= 0 else ""

    return [(ptr, size, phase_at(t)) for t, ptr, size in timed], marks

"""glibc malloc's main arena replayed over tensor allocations (advisor/profiler/heap.py), and the estimator's
price for the pages a CPU step faults in. Every expected figure is derived by hand beside it."""

from __future__ import annotations

import pytest

from advisor.profiler.heap import Arena, faulted_bytes, process_threshold, replay, steady_faults
from advisor.profiler.schema import Linear

KIB, MIB = 1024, 1024 * 1024


def test_a_mapped_block_raises_the_threshold_and_the_next_one_lives_on_the_heap():
    arena = Arena()
    # 1 MiB >= the 128 KiB threshold: mapped on its own, the chunk (1 MiB + 8 header, 16-aligned = 1,048,592)
    # plus 8 rounded to pages: 1,052,672 bytes faulted
    first = arena.malloc(MIB)
    assert arena.faulted == 1_052_672
    arena.free(first)  # the threshold rises to 1,052,672, the trim threshold to twice that
    assert (arena.mmap_threshold, arena.trim_threshold) == (1_052_672, 2_105_344)
    # the same request now comes from the heap: 1,048,592 bytes, 257 pages (1,052,672) touched
    second = arena.malloc(MIB)
    assert arena.faulted == 2 * 1_052_672
    arena.free(second)  # the top is 1,179,648 bytes (the chunk + 128 KiB pad, in pages) < the trim threshold: kept
    arena.malloc(MIB)
    assert arena.faulted == 2 * 1_052_672  # reused, no new pages


def test_a_block_at_the_threshold_comes_from_the_top_when_the_top_holds_it():
    """glibc maps a block only when no free chunk and not the top can hold it (sysmalloc); checked on this project's
    VM with ctypes (glibc 2.36): after a 4 MiB block mapped and freed, and two 3 MiB blocks put on the heap and
    freed, a 5 MiB request took no mapping (mallinfo2's hblkhd unchanged) and left the heap's size as it was."""
    arena = Arena()
    arena.free(arena.malloc(4 * MIB))  # mapped: (4 MiB + 8, 16-aligned, + 8) in pages = 4,198,400; the threshold
    assert (arena.mmap_threshold, arena.trim_threshold) == (4_198_400, 8_396_800)
    # two 3 MiB chunks (3,145,744 bytes each) on the heap: it grows by (3,145,744 + 128 KiB pad) in pages =
    # 3,280,896, then by (3,145,744 - 135,152 left + 131,072) in pages = 3,145,728, to 6,426,624; their 6,291,488
    # bytes touch 1,537 pages, 6,295,552 bytes
    first, second = arena.malloc(3 * MIB), arena.malloc(3 * MIB)
    assert arena.brk == 6_426_624 and arena.faulted == 4_198_400 + 6_295_552
    # freed, the top holds all 6,426,624 bytes, under the 8,396,800 trim threshold: kept
    arena.free(second)
    arena.free(first)
    # 5 MiB (a chunk of 5,242,896) is above the threshold, but the top holds it and 32 more: split off the top, on
    # pages already touched; nothing mapped, nothing faulted
    arena.malloc(5 * MIB)
    assert arena.mapped == {} and arena.top == 5_242_896 and arena.faulted == 10_493_952


def test_a_block_above_32_mib_faults_in_every_step():
    # 40 MiB is above glibc's 32 MiB ceiling for the dynamic threshold: mapped and unmapped every step,
    # (40 MiB + 8, 16-aligned, + 8) in pages = 41,947,136 bytes a step; the build before the first mark (a 1 KiB
    # block) is no step's
    step = [(1, 40 * MIB), (1, -40 * MIB)]
    events = [(9, KIB)] + step * 3
    assert replay(events, [1, 3, 5]) == [41_947_136] * 3
    assert faulted_bytes(events, [1, 3, 5]) == 41_947_136


def test_faults_are_told_apart_by_the_phase_they_ran_in():
    # a 40 MiB block in the forward pass and another in the optimizer, each mapped afresh every step
    # (41,947,136 bytes, as above): 83,894,272 a step, half in each phase
    step = [
        (1, 40 * MIB, "forward"),
        (1, -40 * MIB, "forward"),
        (2, 40 * MIB, "optimizer"),
        (2, -40 * MIB, "optimizer"),
    ]
    total, shares = steady_faults(step * 3, [0, 4, 8])
    assert total == 83_894_272 and shares == {"forward": 0.5, "optimizer": 0.5}


def test_the_top_of_the_heap_is_released_and_faulted_in_again():
    # three 100 KiB blocks (chunks of 102,416 bytes) below the 128 KiB threshold, freed at the end of the step
    step = [(1, 100 * KIB), (2, 100 * KIB), (3, 100 * KIB), (1, -100 * KIB), (2, -100 * KIB), (3, -100 * KIB)]
    first, second = replay(step * 2, [0, 6], 128 * KIB)  # from glibc's start, as a process that read no file
    # first step: the heap grows to 237,568 bytes (a chunk + 128 KiB pad, in pages), then by 204,800 more for the
    # third; the three chunks end at 307,248: 76 pages, 311,296 bytes touched
    assert first == 311_296
    # freeing the third coalesces all three into the top (307,248 bytes free, 442,368 mapped), above the 128 KiB
    # trim threshold: all but the pad goes back, (442,368 - 131,072 - 33) // 4096 = 75 pages, leaving 135,168.
    # Second step: the first chunk fits in the 135,168 left; the second grows the heap by 204,800 to 339,968 and
    # touches up to 208,896 (73,728 new bytes); the third up to 311,296 (102,400 more): 176,128
    assert second == 176_128


def test_a_replay_starts_where_reading_the_model_file_left_glibc():
    # advisor.io.read_bytes' last read asks CPython for a 4 MiB bytes object: malloc(4,194,304 + 33), a chunk of
    # 4,194,352 (+ 8 header, 16-aligned), mapped in pages: (4,194,352 + 8) rounded up to 4,096 = 4,198,400; freed
    # empty, it raises the threshold to that, the trim threshold to 8,396,800
    assert process_threshold() == 4_198_400


def test_from_the_process_start_an_update_keeps_its_temporaries_resident():
    # an optimizer-like step: two 1.5 MiB temporaries (chunks of 1,572,880 bytes), freed in turn
    mib = 3 * MIB // 2
    step = [(1, mib), (2, mib), (1, -mib), (2, -mib)]
    marks = [0, 4, 8, 12]
    # from glibc's 128 KiB start: the first step maps both (freeing them raises the thresholds to 1,576,960 and
    # 3,153,920); the second puts them on the heap: it grows to 1,708,032 (the chunk + 128 KiB pad, in pages) and
    # touches 1,576,960, then to 3,280,896, touching 1,572,864 more; freeing both leaves 3,280,896 free at the top,
    # above the trim threshold: (3,280,896 - 131,072 - 33) // 4,096 = 768 pages go back, 135,168 stay. Every later
    # step grows it again: 1,576,960 - 135,168 + 1,572,864 = 3,014,656 bytes; the steady median (steps 2-4:
    # 3,149,824, 3,014,656, 3,014,656) is 3,014,656
    assert steady_faults(step * 4, marks, 128 * KIB)[0] == 3_014_656
    # from the process's start (trim threshold 8,396,800) the 3,280,896 free bytes stay: nothing after the first step
    assert steady_faults(step * 4, marks)[0] == 0.0


def test_page_faults_cost_the_calibrated_first_touch_rate_on_a_cpu():
    from advisor import api

    catalog = api.catalog()
    prof = api.profile_from("lstm")
    faults = Linear(fixed=50e6)  # 50 MB a step
    faulting = prof.model_copy(update={"memory": prof.memory.model_copy(update={"step_fault_bytes": faults})})
    cpu = catalog.devices["epyc-9654"]
    eff = catalog.efficiency[cpu.efficiency]
    priced = catalog.model_copy(
        update={"efficiency": {**catalog.efficiency, eff.id: eff.model_copy(update={"first_touch_bandwidth": 2.5e9})}}
    )
    base = api.estimate(prof, "epyc-9654", precision="fp32", micro_batch=8, global_batch=8, cat=priced)
    with_faults = api.estimate(faulting, "epyc-9654", precision="fp32", micro_batch=8, global_batch=8, cat=priced)
    # 50e6 bytes / 2.5e9 B/s = 20 ms more, in the backward pass (a profile that does not split them by phase)
    assert with_faults.step_time_s - base.step_time_s == pytest.approx(0.020)
    assert with_faults.phases["backward"].seconds - base.phases["backward"].seconds == pytest.approx(0.020)
    # split a quarter forward, three quarters optimizer: 5 ms and 15 ms
    split = faulting.memory.model_copy(update={"step_fault_shares": {"forward": 0.25, "optimizer": 0.75}})
    by_phase = api.estimate(
        faulting.model_copy(update={"memory": split}), "epyc-9654", precision="fp32", micro_batch=8, global_batch=8,
        cat=priced,
    )  # fmt: skip
    assert by_phase.phases["forward"].seconds - base.phases["forward"].seconds == pytest.approx(0.005)
    assert by_phase.phases["optimizer"].seconds - base.phases["optimizer"].seconds == pytest.approx(0.015)
    assert by_phase.phases["backward"].seconds == pytest.approx(base.phases["backward"].seconds)

    # without a measured rate (a datasheet CPU) or on a GPU, nothing is added
    def step(profile, hardware, cat):
        return api.estimate(profile, hardware, precision="fp32", micro_batch=8, global_batch=8, cat=cat).step_time_s

    assert step(faulting, "epyc-9654", catalog) == pytest.approx(step(prof, "epyc-9654", catalog))
    assert step(faulting, "a100-80gb-sxm", priced) == pytest.approx(step(prof, "a100-80gb-sxm", priced))


def test_a_cpu_estimate_of_a_profile_made_elsewhere_says_what_it_leaves_out():
    """A profile made on meta (or CUDA) has no allocation replay and records the GPU's multi-tensor optimizer:
    estimated on a CPU it says so and how to get both counted; one made on the CPU does not; a GPU estimate of
    the meta profile does not either."""
    from advisor import api

    meta = api.profile_from("lstm")
    assert meta.device != "cpu" and meta.memory.step_fault_bytes is None
    cpu_made = meta.model_copy(update={"device": "cpu"})

    def told(prof, hardware: str) -> bool:
        est = api.estimate(prof, hardware, precision="fp32", micro_batch=8, global_batch=8)
        return any(n.startswith(f"profiled on {prof.device}, estimated on a CPU") for n in est.assumptions)

    assert told(meta, "epyc-9654")
    assert not told(cpu_made, "epyc-9654")
    assert not told(meta, "a100-80gb-sxm")

"""`advisor validate`: measured vs predicted per phase, and its bad inputs."""

from __future__ import annotations

import json

import pytest
from conftest import ROOT, assert_user_error, run_cli
from test_calibrate import write_user_overlay

from advisor.calibration.validate import Validation, band_note, combine, rows, spread_note
from advisor.profiler.schema import Timing


def test_rows_errors_by_phase_and_total():
    out = rows(
        {"forward": 0.1, "backward": 0.2, "optimizer": 0.1}, {"forward": 0.11, "backward": 0.18, "optimizer": 0.1}
    )
    assert [r.phase for r in out] == ["forward", "backward", "optimizer", "total"]
    assert out[0].error == pytest.approx(0.1)  # (0.11 - 0.1) / 0.1
    assert out[1].error == pytest.approx(-0.1)  # (0.18 - 0.2) / 0.2
    assert out[3].measured_s == pytest.approx(0.4) and out[3].predicted_s == pytest.approx(0.39)
    assert out[3].error == pytest.approx(-0.025)  # (0.39 - 0.4) / 0.4


def timing(median: float, fastest: float | None, slowest: float | None) -> Timing:
    return Timing(device_name="cpu", batch_size=8, warmup=3, repeats=7, step_time_s=median,
                  step_fastest_s=fastest, step_slowest_s=slowest)  # fmt: skip


def test_the_timed_steps_spread_and_when_it_is_worth_a_note():
    # 7 steps of 40-46 ms around a 42 ms median: (46 - 40) / 42 = 0.142857
    spread, note = spread_note(timing(0.042, 0.040, 0.046), -0.10)
    assert spread == pytest.approx(6 / 42)
    assert "40-46 ms, 14% of the median" in note and "(-10%) is inside that scatter" in note
    # the same steps, an error larger than the scatter
    assert "(+20%) is beyond that scatter" in spread_note(timing(0.042, 0.040, 0.046), 0.20)[1]
    # steps 41.0-42.5 ms: (42.5 - 41) / 42 = 0.0357 < 0.05, recorded without a note
    spread, note = spread_note(timing(0.042, 0.041, 0.0425), 0.30)
    assert spread == pytest.approx(1.5 / 42) and note is None
    # a profile made before steps' extremes were recorded
    assert spread_note(timing(0.042, None, None), 0.0) == (None, None)


def one_run(forward: float, backward: float, faults: float, notes: list[str]) -> Validation:
    measured = {"forward": forward, "backward": backward, "optimizer": 0.001}
    predicted = {"forward": 0.010, "backward": 0.020, "optimizer": 0.001}
    return Validation(model="m", device="local-cpu", batch_size=8, precision="fp32", threads=2,
                      rows=rows(measured, predicted), page_fault_bytes=faults, step_spread=0.02,
                      notes=notes)  # fmt: skip


def test_runs_in_fresh_processes_combine_as_their_median():
    step_note = "the 7 timed steps took 30-33 ms, 10% of the median apart; ..."
    fault_note = "page faults: 38 MB per step came back from the OS, ..."
    out = combine([one_run(0.012, 0.020, 38e6, [fault_note, step_note]), one_run(0.010, 0.022, 51e6, []),
                   one_run(0.011, 0.030, 44e6, [])])  # fmt: skip
    # phase medians: forward 11 ms, backward 22 ms, optimizer 1 ms; total 34 ms against 31 ms predicted
    assert [r.measured_s for r in out.rows] == pytest.approx([0.011, 0.022, 0.001, 0.034])
    assert out.rows[-1].error == pytest.approx((0.031 - 0.034) / 0.034)  # -8.8 %
    assert out.page_fault_bytes == 44e6 and out.runs == 3
    # run totals 33, 33 and 42 ms: (42 - 33) / 33 = 0.2727
    assert out.run_spread == pytest.approx(9 / 33)
    assert out.notes[0] == fault_note and step_note not in out.notes
    assert (
        "the 3 runs measured 33-42 ms a step, 27% of their median apart; the total's error (-9%) is inside"
        in (out.notes[-1])
    )
    single = one_run(0.012, 0.020, 38e6, [])
    assert combine([single]) is single


def test_the_error_band_note_says_whether_the_total_is_inside_it():
    basis = "±6%: median |error| of 28 training steps"
    assert band_note(-0.05, 0.06, basis) == (
        "band: the total's error (-5%) is inside the estimate's error band (±6%: median |error| of 28 training steps)"
    )
    assert "(-16%) is outside" in band_note(-0.16, 0.06, basis)
    assert "error band (±12%)" in band_note(0.2, 0.12, None)  # no basis: the band alone
    assert band_note(-0.16, None, None) is None


def test_runs_combine_their_band_note_on_the_combined_error():
    # each run alone: -3 % (31 ms predicted against 32 ms) and -21 % (against 39 ms), each noted against a ±6 % band;
    # combined, the phases' medians (forward 11 ms, backward 23.5 ms, optimizer 1 ms) make 35.5 ms: -12.7 %, outside
    runs = []
    for forward, backward in ((0.011, 0.020), (0.011, 0.027)):
        run = one_run(forward, backward, 0.0, [])
        note = band_note(run.rows[-1].error, 0.06, "±6%: basis")
        runs.append(run.model_copy(update={"error_band": 0.06, "error_basis": "±6%: basis", "notes": [note]}))
    assert "(-3%) is inside" in runs[0].notes[0] and "(-21%) is outside" in runs[1].notes[0]
    out = combine(runs)
    assert out.rows[-1].error == pytest.approx((0.031 - 0.0355) / 0.0355)
    assert [n for n in out.notes if n.startswith("band: ")] == [
        "band: the total's error (-13%) is outside the estimate's error band (±6%: basis)"
    ]


def test_without_calibration_says_to_calibrate(tmp_path):
    result = run_cli("validate", "tests/models/tiny_mlp.py", env={"XDG_CONFIG_HOME": str(tmp_path)})
    assert_user_error(result, "no calibration", "advisor calibrate")


def test_bad_model_files(tmp_path):
    env = {"XDG_CONFIG_HOME": str(tmp_path)}
    write_user_overlay(tmp_path)
    assert_user_error(run_cli("validate", str(tmp_path / "missing.py"), env=env), "missing.py does not exist")
    broken = tmp_path / "broken.py"
    broken.write_text("def build_model(:\n")
    assert_user_error(run_cli("validate", str(broken), env=env), "broken.py")
    assert_user_error(run_cli("validate", "tests/models/tiny_mlp.py", "--precision", "fp8", env=env), "fp8")


def test_validate_prints_measured_predicted_and_error(tmp_path):
    env = {"XDG_CONFIG_HOME": str(tmp_path)}
    write_user_overlay(tmp_path)
    result = run_cli(
        "validate",
        str(ROOT / "tests/models/tiny_mlp.py"),
        "--batch-size",
        "4",
        "--repeats",
        "2",
        "--threads",
        "1",
        "--format",
        "json",
        env=env,
    )
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["device"] == "local-cpu" and out["batch_size"] == 4 and out["threads"] == 1
    total = out["rows"][3]
    assert total["phase"] == "total"
    assert total["measured_s"] > 0 and total["predicted_s"] > 0
    assert total["error"] == pytest.approx((total["predicted_s"] - total["measured_s"]) / total["measured_s"])
    assert out["step_spread"] is not None and out["step_spread"] >= 0
    assert out["runs"] == 1 and "run_spread" not in out  # None fields are left out of JSON
    assert not any(n.startswith("calibration: flagged") for n in out["notes"])  # a clean calibration: no note
    # the estimate's error band comes with the comparison, and a note says where the total's error stands against it
    assert 0 < out["error_band"] < 1 and out["error_basis"]
    where = "inside" if abs(total["error"]) <= out["error_band"] else "outside"
    assert any(n.startswith("band: ") and f"is {where} the estimate's error band" in n for n in out["notes"])


def test_validate_runs_fresh_processes_and_reports_their_median(tmp_path):
    env = {"XDG_CONFIG_HOME": str(tmp_path)}
    write_user_overlay(tmp_path)
    args = ["validate", str(ROOT / "tests/models/tiny_mlp.py"), "-b", "4", "--repeats", "2", "--threads", "1"]
    result = run_cli(*args, "--runs", "2", "--format", "json", env=env)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["runs"] == 2 and out["run_spread"] >= 0 and "run 2 of 2" in result.stderr
    phases, total = out["rows"][:3], out["rows"][3]
    assert total["measured_s"] == pytest.approx(sum(r["measured_s"] for r in phases))
    assert_user_error(run_cli(*args, "--runs", "0", env=env), "--runs")


def test_a_fresh_48_mib_buffer_per_step_is_48_mib_of_page_faults():
    import platform

    if platform.system() != "Linux":
        pytest.skip("glibc's allocator: Linux")
    from advisor.profiler.profile import profile_model

    prof = profile_model(ROOT / "tests/models/fresh_buffer.py", batch_size=2, device="cpu", warmup=1, repeats=3)
    # torch.ones(12 Mi) is 48 MiB = 50,331,648 B, above glibc's 32 MiB mmap ceiling: fresh pages every step,
    # all touched; the rest of the step (a 16-32-4 MLP) adds at most a few pages
    assert 50_331_648 <= prof.timing.page_fault_bytes < 50_331_648 + 4 * 1024 * 1024


def test_first_touch_costs_time_and_the_note_says_how_much():
    import platform

    from advisor.calibration.validate import fault_note, first_touch_s_per_byte

    if platform.system() == "Linux":  # glibc maps 64 MiB afresh each time: faulting it in is not free
        assert first_touch_s_per_byte() > 0
    # 38.3 MB at 17 ms of a 34.4 ms step: 49 %
    line = fault_note(38.3e6, 0.017, 0.0344)
    assert "38 MB per step" in line and "about 17 ms (49% of the measured step)" in line
    assert "MALLOC_MMAP_THRESHOLD_=4294967295 MALLOC_TRIM_THRESHOLD_=4294967295" in line
    assert "which the estimate leaves out" in line
    assert "of which the estimate counts 51 MB" in fault_note(38.3e6, 0.017, 0.0344, 51.4e6)


def test_validate_says_how_much_of_the_faulting_the_estimate_counted(tmp_path):
    from advisor.profiler.profile import glibc

    if not glibc():
        pytest.skip("the replay is of glibc malloc")
    env = {"XDG_CONFIG_HOME": str(tmp_path)}
    write_user_overlay(tmp_path)  # its calibration measured a first-touch rate: the estimate prices faults
    result = run_cli(
        "validate", str(ROOT / "tests/models/fresh_buffer.py"), "--batch-size", "2", "--repeats", "3",
        "--threads", "1", "--format", "json", env=env,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    # the step's fresh 48 MiB buffer is mapped anew each step: (48 MiB + 8, 16-aligned, + 8) in pages = 50.3 MB
    # replayed, all of it counted
    assert any("of which the estimate counts 50 MB" in note for note in out["notes"]), out["notes"]


def test_steps_are_timed_before_anything_else_runs_in_the_process(monkeypatch):
    """A user's training script faults in what glibc hands back, step after step; after the counting passes
    (two batches, a traced replay) glibc's thresholds have grown and a step faults in nothing. So the timed steps
    come first: the order of the calls profile_model makes is timing, then batch 1, then batch 2."""
    from advisor.profiler import profile

    calls = []
    real_time, real_run = profile.time_steps, profile.run_step

    def time_steps(*args, **kwargs):
        calls.append("timing")
        return real_time(*args, **kwargs)

    def run_step(mf, dev, batch, *args, **kwargs):
        calls.append(f"count batch {batch}")
        return real_run(mf, dev, batch, *args, **kwargs)

    monkeypatch.setattr(profile, "time_steps", time_steps)
    monkeypatch.setattr(profile, "run_step", run_step)
    prof = profile.profile_model(ROOT / "tests" / "models" / "tiny_mlp.py", batch_size=4, device="cpu", warmup=1,
                                 repeats=2, faults=False)  # fmt: skip
    assert calls == ["timing", "count batch 4", "count batch 8"]
    assert prof.timing is not None and prof.timing.repeats == 2


def test_the_threads_state_against_the_calibration_and_when_it_is_worth_a_note():
    from advisor.calibration.validate import thread_note

    # probes 6.8 and 6.9 µs around the steps, 4.5 µs calibrated: median 6.85 / 4.5 = 1.52 >= 1.25, a slower state
    note = thread_note([6.8e-6, 6.9e-6], 4.5e-6)
    assert "took 6.8-6.9 µs around these steps against 4.5 µs when calibrated (1.5x)" in note
    assert "a slower state than at calibration" in note and "above the estimate" in note
    # 4.4 and 4.6 µs: 4.5 / 4.5 = 1.0, the same state, no note; so is 5.5 / 4.5 = 1.22 < 1.25
    assert thread_note([4.4e-6, 4.6e-6], 4.5e-6) is None
    assert thread_note([5.5e-6], 4.5e-6) is None
    # 3.4 µs against 4.5: 0.76 <= 1 / 1.25 = 0.8, a faster state; one probe shown alone
    note = thread_note([3.4e-6], 4.5e-6)
    assert "took 3.4 µs around" in note and "(0.76x)" in note and "a faster state" in note
    # one thread (no probe) or an older calibration (none recorded): nothing to compare
    assert thread_note(None, 4.5e-6) is None and thread_note([6.8e-6], None) is None


def test_runs_pool_their_thread_probes_for_one_note():
    def run(probes, notes):
        v = one_run(0.010, 0.020, 0.0, notes)
        return v.model_copy(update={"parallel_op_s": probes, "calibrated_parallel_op_s": 4.5e-6})

    stale = "threads: a small parallel op ... (a run's own note)"
    # probes of three runs: 4.4, 4.5, 6.8, 6.9, 7.0, 7.1 µs, median (6.8 + 6.9) / 2 = 6.85: 1.52x, slower
    out = combine([run([4.4e-6, 4.5e-6], []), run([6.8e-6, 6.9e-6], [stale]), run([7.0e-6, 7.1e-6], [])])
    assert out.parallel_op_s == pytest.approx([4.4e-6, 4.5e-6, 6.8e-6, 6.9e-6, 7.0e-6, 7.1e-6])
    assert stale not in out.notes
    assert [n for n in out.notes if n.startswith("threads: ")][0].count("took 4.4-7.1 µs") == 1
    # two fast runs and one slow: median 4.55 µs, 1.01x, no note
    out = combine([run([4.4e-6, 4.5e-6], []), run([4.6e-6, 4.6e-6], []), run([7.0e-6, 7.1e-6], [stale])])
    assert not [n for n in out.notes if n.startswith("threads: ")]


def test_steps_timed_on_two_threads_carry_the_probes_around_them():
    import torch

    from advisor.profiler.profile import parallel_op_s, profile_model

    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        prof = profile_model(ROOT / "tests" / "models" / "tiny_mlp.py", batch_size=4, device="cpu", warmup=1,
                             repeats=2, faults=False)  # fmt: skip
        # one probe before the steps, one after; an add on 40,000 floats takes microseconds, not a millisecond
        assert len(prof.timing.parallel_op_s) == 2 and all(0 < t < 1e-3 for t in prof.timing.parallel_op_s)
        torch.set_num_threads(1)
        assert parallel_op_s() is None  # one thread: no parallel region to time
        prof = profile_model(ROOT / "tests" / "models" / "tiny_mlp.py", batch_size=4, device="cpu", warmup=1,
                             repeats=2, faults=False)  # fmt: skip
        assert prof.timing.parallel_op_s is None
    finally:
        torch.set_num_threads(threads)


def test_validate_compares_the_threads_state_only_at_the_calibrated_thread_count(tmp_path):
    import yaml
    from test_calibrate import fake_measurements

    from advisor.calibration.overlay import build

    m = fake_measurements()  # calibrated on 2 threads
    m.parallel_op_s = [1e-3]  # a probe no real CPU takes a millisecond for: any real run is in a "faster state"
    m.warnings = ["the cost of a trivial op took 1.13 µs at the start and 2.14 µs at the end"]  # flagged
    folder = tmp_path / "advisor" / "catalog"
    folder.mkdir(parents=True)
    (folder / "local-cpu.yaml").write_text(yaml.safe_dump(build(m, {"forward": 20e-6, "backward": 25e-6})))
    env = {"XDG_CONFIG_HOME": str(tmp_path)}

    def run(threads):
        result = run_cli("validate", "tests/models/tiny_mlp.py", "--repeats", "2", "--threads", threads,
                         "--format", "json", env=env)  # fmt: skip
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout)

    out = run("2")
    assert out["calibrated_parallel_op_s"] == pytest.approx(1e-3) and len(out["parallel_op_s"]) == 2
    assert any(n.startswith("threads: ") and "a faster state than at calibration" in n for n in out["notes"])
    # the calibration was flagged: validate says so, with what calibrate found, at any thread count
    flagged = "calibration: flagged when it was measured (the cost of a trivial op took 1.13 µs at the start"
    assert sum(n.startswith(flagged) for n in out["notes"]) == 1
    out = run("1")
    assert sum(n.startswith(flagged) for n in out["notes"]) == 1  # another thread count: no probe, nothing compared
    assert out.get("calibrated_parallel_op_s") is None and out.get("parallel_op_s") is None  # None: left out
    assert not any(n.startswith("threads: ") for n in out["notes"])

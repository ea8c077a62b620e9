"""``gpu.bench.timing.round_robin``: the one timing loop of ``gpu.bench.cli`` (CPU), ``benchmarks/bench_banded.py`` and
``benchmarks/bench_sa_layer.py``.

A fake clock and steps that record their calls check, against the obvious oracle, that every step is timed ``repeats``
times, that round ``r`` starts at step ``r`` (every step takes every position once per ``len(steps)`` rounds; its
predecessor stays the same in every round but those where it runs first), that the warm-up call is not timed and that
each time is the step's own call; ``gpu.bench.cli`` and ``bench_banded`` keep the median (``bench_banded`` also the
minimum) of those times, ``bench_sa_layer`` the minimum, after checking every row's output."""

import json
import random
import statistics

import pytest
from benchmark_scripts import ROOT, load_benchmark

from gpu.bench.timing import _times, round_robin


class FakeClock:
    """``clock()`` returns ``now``; a step advances it by the seconds it is meant to take."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def recording_steps(names, clock, calls, seconds):
    """Steps that append their name to ``calls`` and advance ``clock`` by ``seconds(name, k)`` on their ``k``-th
    call (``k = 0``: the warm-up)."""
    counts = dict.fromkeys(names, 0)

    def make(name):
        def step():
            calls.append(name)
            clock.now += seconds(name, counts[name])
            counts[name] += 1

        return step

    return {name: make(name) for name in names}


def oracle_order(names, repeats):
    """The warm-up in order, then round ``r`` = ``names`` rotated left by ``r mod len(names)``."""
    m = len(names)
    return list(names) + [names[(r + i) % m] for r in range(repeats) for i in range(m)]


def test_rounds_rotate_and_the_warm_up_is_not_timed():
    clock, calls = FakeClock(), []
    # warm-up calls take 1000 s, the k-th timed call of step j takes j + k / 100 s: every time is traceable
    names = ["a", "b", "c"]
    steps = recording_steps(names, clock, calls, lambda name, k: 1000.0 if k == 0 else names.index(name) + k / 100)
    runs = round_robin(steps, 4, clock=clock)
    assert calls == ["a", "b", "c", "a", "b", "c", "b", "c", "a", "c", "a", "b", "a", "b", "c"]
    assert list(runs) == names
    for j, name in enumerate(names):
        assert runs[name] == pytest.approx([j + k / 100 for k in range(1, 5)])  # 1000 s (the warm-up) left out


def test_random_cases_match_the_oracle():
    rng = random.Random(0)
    for _ in range(200):
        m, repeats = rng.randint(1, 7), rng.randint(1, 9)
        names = [f"p{i}" for i in rng.sample(range(100), m)]
        durations = {name: rng.uniform(0.1, 5.0) for name in names}
        clock, calls = FakeClock(), []
        steps = recording_steps(names, clock, calls, lambda name, k, d=durations: 99.0 if k == 0 else d[name])
        runs = round_robin(steps, repeats, clock=clock)
        assert calls == oracle_order(names, repeats)
        for name in names:
            assert len(runs[name]) == repeats and runs[name] == pytest.approx([durations[name]] * repeats)
        # every step is first in exactly the rounds r with r = its index (mod m)
        firsts = calls[m::m]
        assert firsts == [names[r % m] for r in range(repeats)]


def test_every_step_takes_every_position_of_a_round():
    """Over ``m`` rounds every step runs at every position of a round once (a fixed order would not): position
    effects are averaged."""
    names = list("abcde")
    calls = []
    round_robin({n: (lambda n=n: calls.append(n)) for n in names}, len(names))
    rounds = [calls[i : i + len(names)] for i in range(len(names), len(calls), len(names))]
    for position in range(len(names)):
        assert sorted(r[position] for r in rounds) == names


def test_round_robin_without_warmup_times_every_call():
    calls = []
    runs = round_robin({n: (lambda n=n: calls.append(n)) for n in "ab"}, 3, warmup=False)
    assert calls == ["a", "b", "b", "a", "a", "b"]
    assert [len(t) for t in runs.values()] == [3, 3]


def timed_predecessors(names, repeats):
    """``{name: [the step called right before its timed call in round 0, 1, ...]}`` (round 0's first step follows
    the last warm-up call), read off the recorded calls."""
    calls = []
    round_robin({n: (lambda n=n: calls.append(n)) for n in names}, repeats)
    m = len(names)
    before = {name: [] for name in names}
    for k in range(m, len(calls)):
        before[calls[k]].append(calls[k - 1])
    return before


def test_the_predecessor_is_mostly_the_same_so_carry_over_is_not_balanced():
    """The rotation moves the position only: step ``i`` follows step ``i - 1 (mod m)`` in every round but the
    rounds ``r >= 1`` with ``r = i (mod m)``, where it follows step ``i - 2 (mod m)`` (what ``round_robin``'s
    docstring states). The reviewer's case: 5 steps over 20 rounds, ``b`` follows ``a`` in 16 of the 20."""
    before = timed_predecessors(list("abcde"), 20)
    assert before["b"].count("a") == 16 and before["b"].count("e") == 4
    assert all(max(map(before[n].count, set(before[n]))) == 16 for n in "bcde")
    assert before["a"].count("e") == 17  # round 0 follows the warm-up's last call, e
    rng = random.Random(1)
    for _ in range(200):
        m, repeats = rng.randint(1, 7), rng.randint(1, 30)
        names = [f"p{i}" for i in rng.sample(range(100), m)]
        expected = {
            name: [names[(i - 2) % m] if r >= 1 and r % m == i else names[(i - 1) % m] for r in range(repeats)]
            for i, name in enumerate(names)
        }
        assert timed_predecessors(names, repeats) == expected


def test_real_clock_and_cpu_times():
    """The default clock is ``time.perf_counter``; ``gpu.bench.cli``'s CPU path is the same loop."""
    calls = []
    runs = _times({"a": lambda: calls.append("a"), "b": lambda: calls.append("b")}, 3, cuda=False)
    assert calls == ["a", "b", "a", "b", "b", "a", "a", "b"]
    assert all(len(t) == 3 and min(t) >= 0 for t in runs.values())


@pytest.mark.parametrize(
    ("call", "needle"),
    [
        (lambda: round_robin({"a": print}, 0), "repeats"),
    ],
)
def test_bad_input_is_a_one_line_error_naming_the_argument(call, needle):
    with pytest.raises(ValueError, match=rf"^{needle}:") as info:
        call()
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("call", "needle"),
    [
        (lambda: round_robin({"a": print}, True), "repeats"),
        (lambda: round_robin({"a": print}, 2.0), "repeats"),
        (lambda: round_robin([print], 2), "steps"),
        (lambda: round_robin({"a": 3}, 2), "steps"),
        (lambda: round_robin({"a": print}, 2, clock=0.0), "clock"),
        (lambda: round_robin({"a": print}, 2, warmup=1), "warmup"),
    ],
)
def test_wrong_type_is_a_type_error(call, needle):
    with pytest.raises(TypeError, match=rf"^{needle}:"):
        call()


def test_bad_input_calls_nothing():
    calls = []
    with pytest.raises(ValueError, match=r"^repeats:"):
        round_robin({"a": lambda: calls.append("a")}, 0)
    assert calls == []


def test_gpu_bench_keeps_the_median(tmp_path):
    """``gpu.bench.cli`` rows: ``seconds`` is the median of the ``repeats`` timed calls (``repeat_seconds``)."""
    pytest.importorskip("torch")
    from gpu.bench.cli import main

    out = tmp_path / "bench.json"
    argv = ["--n", "64", "--w", "16", "--heads", "1", "--d", "8", "--repeats", "4", "--backends", "torch"]
    assert main([*argv, "--json", str(out), "--plot", str(tmp_path / "cost")]) == 0
    rows = json.loads(out.read_text())["rows"]
    assert rows
    for row in rows:
        assert len(row["repeat_seconds"]) == 4 and row["seconds"] == statistics.median(row["repeat_seconds"])


def test_bench_banded_keeps_the_median_and_the_best():
    """``benchmarks/bench_banded.py`` rows: ``seconds`` the median, ``best_seconds`` the minimum of the rounds."""
    pytest.importorskip("torch")
    rows = load_benchmark("bench_banded").measure(32, 5, 2, 4, 3, [10])
    paths = {"chunked", "one shot", "1-head calls, chunked", "1-head calls, one shot", "unfold one shot"}
    assert {r["path"] for r in rows} == paths | {"chunked 2^10"}
    assert {r["pass"] for r in rows} == {"forward", "forward+backward"}
    for row in rows:
        assert len(row["runs"]) == 3
        assert row["seconds"] == statistics.median(row["runs"]) and row["best_seconds"] == min(row["runs"])
        assert row["max_abs_diff_vs_one_shot"] < 1e-5


SA_ARGV = ["--n", "512", "--w", "8", "--repeats", "3"]


@pytest.fixture(scope="module")
def bench_sa_layer(tmp_path_factory):
    """``benchmarks/bench_sa_layer.py`` loaded with its numba cache in a temporary folder: a module loaded from a
    file path is not importable by name, so cache entries written from it would break the script's own cache."""
    numba_config = pytest.importorskip("numba").config
    saved = numba_config.CACHE_DIR
    numba_config.CACHE_DIR = str(tmp_path_factory.mktemp("numba_cache"))
    try:
        yield load_benchmark("bench_sa_layer")
    finally:
        numba_config.CACHE_DIR = saved


def test_bench_sa_layer_checks_every_row_then_keeps_the_best_round(bench_sa_layer, tmp_path, monkeypatch):
    """``benchmarks/bench_sa_layer.py``: every row is called and checked once, then timed by ``round_robin``;
    ``seconds`` is the minimum of its rounds (``runs``; the designed rounds make median and mean differ from it)
    and every ratio is taken from those minima."""
    module = bench_sa_layer
    seen = []

    def designed(steps, repeats):
        seen.append((list(steps), repeats))
        real = round_robin(steps, repeats)
        return {name: [3.0 + j, 1.0 + j, 2.5 + j][:repeats] for j, name in enumerate(real)}

    monkeypatch.setattr(module, "round_robin", designed)
    out = tmp_path / "sa.json"
    assert module.main([*SA_ARGV, "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    names = list(doc["seconds"])
    fixed = ["floor: parallel numba copy", "floor: np.copyto", "permuted copy (numba)"]
    fixed += ["permuted copy, engine's row pass", "engine window_or", "reference van Herk (numba)"]
    assert seen == [(names, 3)] and names == [*fixed, "chunk-and-halo kernel"]  # n = 512: no narrow tiles
    for j, name in enumerate(names):
        assert doc["runs"][name] == [3.0 + j, 1.0 + j, 2.5 + j] and doc["seconds"][name] == 1.0 + j
    floor = min(doc["seconds"]["floor: parallel numba copy"], doc["seconds"]["floor: np.copyto"])
    assert doc["floor_seconds"] == floor
    assert doc["engine_over_floor"] == doc["seconds"]["engine window_or"] / floor
    assert doc["ratio_to_floor"] == {name: sec / floor for name, sec in doc["seconds"].items()}
    assert len(doc["load_average_before"]) == 3 and len(doc["load_average_after"]) == 3


def test_bench_sa_layer_real_rounds_and_a_wrong_row_is_caught(bench_sa_layer, tmp_path, monkeypatch):
    """With the real loop every row (at n = 8192 also the 64-word tiles, checked against the engine) has
    ``repeats`` non-negative rounds and keeps their minimum; a row whose kernel is wrong fails its check before
    any timing."""
    module = bench_sa_layer
    out = tmp_path / "sa.json"
    assert module.main(["--n", "8192", *SA_ARGV[2:], "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert len(doc["runs"]) == 8 and "engine kernel, 64-word tiles" in doc["runs"]
    for name, times in doc["runs"].items():
        assert len(times) == 3 and min(times) >= 0 and doc["seconds"][name] == min(times)

    def wrong(bits, out, perm, left, right, g, h):
        out[:] = bits

    monkeypatch.setattr(module, "reference_van_herk", wrong)
    with pytest.raises(AssertionError, match="reference van Herk"):
        module.main([*SA_ARGV, "--json", str(tmp_path / "wrong.json")])
    assert not (tmp_path / "wrong.json").exists()


def _committed(name):
    path = ROOT / "benchmarks" / "results" / name
    return path, path.read_bytes()


def test_bench_banded_prints_without_json_and_writes_only_where_json_says(tmp_path, monkeypatch, capsys):
    """No default write into the checkout: without ``--json`` the tables are printed and no file is written (run
    from an empty working folder); ``--json`` writes exactly there."""
    pytest.importorskip("torch")
    module = load_benchmark("bench_banded")
    committed, before = _committed("banded.json")
    monkeypatch.chdir(tmp_path)
    argv = ["--n", "32", "--w", "5", "--heads", "2", "--d", "4", "--repeats", "1"]
    assert module.main(argv) == 0
    assert "chunked" in capsys.readouterr().out
    assert committed.read_bytes() == before and list(tmp_path.iterdir()) == []
    assert module.main([*argv, "--json", "rows.json"]) == 0
    assert [p.name for p in tmp_path.iterdir()] == ["rows.json"]
    assert json.loads((tmp_path / "rows.json").read_text())["parameters"]["n"] == [32]


def test_bench_sa_layer_prints_without_json(bench_sa_layer, tmp_path, monkeypatch, capsys):
    committed, before = _committed("sa_layer.json")
    monkeypatch.chdir(tmp_path)
    assert bench_sa_layer.main(SA_ARGV) == 0
    assert "engine" in capsys.readouterr().out
    assert committed.read_bytes() == before and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("script", ["bench_banded", "bench_sa_layer"])
@pytest.mark.parametrize("where", ["folder", "missing parent"])
def test_bad_json_path_is_refused_before_any_work(script, where, tmp_path, monkeypatch, capsys):
    if script == "bench_sa_layer":
        pytest.importorskip("numba")
    else:
        pytest.importorskip("torch")
    module = load_benchmark(script)
    monkeypatch.setattr(module, "round_robin", lambda *a: pytest.fail("timed before --json was checked"))
    if script == "bench_banded":
        monkeypatch.setattr(module, "measure", lambda *a: pytest.fail("measured before --json was checked"))
    target = tmp_path if where == "folder" else tmp_path / "missing" / "x.json"
    with pytest.raises(SystemExit) as exit_:
        module.main(["--json", str(target)])
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--json" in err[0]
    assert list(tmp_path.iterdir()) == []

"""``privmap build --utility recommender`` as outside checks call it, and ``sanitize`` of its bundles:
one released row per input row under the input's header, every cell inside the rating domain."""
from __future__ import annotations

import csv
import json
import time

import pytest

from privmap.offline.data import synthetic_ratings


@pytest.fixture(scope="module")
def ratings_csv(tmp_path_factory):
    drawn = synthetic_ratings(700, 60, rank=3, density=0.2, rng=11, shift=0.8)
    return drawn.write_csv(tmp_path_factory.mktemp("rec") / "ratings.csv", private="gender")


@pytest.fixture(scope="module")
def recommender_bundle(run, keys, ratings_csv, tmp_path_factory):
    out = tmp_path_factory.mktemp("rec-bundle") / "rec.bundle"
    result = run("build", ratings_csv, "--private", "gender", "--domain", "1:5", "--utility", "recommender",
                 "--clusters", "auto", "--target-auc", "0.55", "--seed", "3", "--key", keys / "private.pem",
                 "--out", out, "--holdout-folds", "3", "--factors", "4", "--json")
    return out, result


def test_the_pinned_build_form_writes_a_bundle_inspect_describes(run, recommender_bundle):
    out, result = recommender_bundle
    assert "Delta/D0" in result.output                       # the budget was searched with K
    info = json.loads(run("inspect", out, "--json").stdout)
    assert info["mechanism"] == "recommender"
    assert isinstance(info["clusters"], int) and info["clusters"] >= 1
    assert isinstance(info["holdout_leakage_bits"], float)


def test_sanitize_releases_one_full_row_per_user_under_the_input_header(run, keys, recommender_bundle,
                                                                        ratings_csv, tmp_path):
    out, _ = recommender_bundle
    with open(ratings_csv, newline="") as handle:
        rows = list(csv.reader(handle))
    header = rows[0][:-1]
    users = tmp_path / "users.csv"
    with open(users, "w", newline="") as handle:
        w = csv.writer(handle)
        w.writerow(header)
        w.writerows(row[:-1] for row in rows[1:41])
    released = tmp_path / "released.csv"
    run("sanitize", out, "--trusted", keys / "public.pem", users, released)
    with open(released, newline="") as handle:
        got = list(csv.reader(handle))
    assert got[0] == header
    assert len(got) == 41
    for row in got[1:]:
        assert all(cell != "" and 1 <= float(cell) <= 5 for cell in row)


def test_the_recommender_mode_refuses_options_it_cannot_honour(run, keys, ratings_csv, tmp_path):
    for extra, says in ((["--metric", "l1"], "l2 metric"), (["--mechanism", "exact"], "quantized mechanism"),
                        (["--missing", "impute"], "--missing mask")):
        result = run("build", ratings_csv, "--private", "gender", "--domain", "1:5", "--utility", "recommender",
                     "--clusters", "8", "--delta-fraction", "0.5", "--key", keys / "private.pem",
                     "--out", tmp_path / "x.bundle", *extra, ok=False)
        assert result.exit_code == 1 and says in result.output
        assert not (tmp_path / "x.bundle").exists()


def test_a_fixed_recommender_build_clusters_class_blind_only_when_told(run, keys, ratings_csv, tmp_path):
    for extra, blind in (([], None), (["--class-blind"], 1)):
        out = tmp_path / f"blind-{blind}.bundle"
        run("build", ratings_csv, "--private", "gender", "--domain", "1:5", "--utility", "recommender",
            "--clusters", "8", "--delta-fraction", "0.5", "--holdout-folds", "0", "--factors", "4",
            "--key", keys / "private.pem", "--out", out, *extra)
        assert json.loads(run("inspect", out, "--json").stdout)["provenance"].get("class_blind") == blind


def test_the_pinned_auto_build_searches_both_codebooks_and_ships_the_chosen_one(run, recommender_bundle):
    out, result = recommender_bundle
    summary = json.loads(result.stdout)
    candidates = summary["auto"]["candidates"]
    assert {c["class_blind"] for c in candidates} == {False, True}
    assert any(c["delta_fraction"] == 0.0 for c in candidates if c["class_blind"])     # tried first there
    chosen = next(c for c in candidates if c["chosen"])
    meeting = [c for c in candidates if c.get("meets_target")]
    assert chosen["holdout_distortion"] == min(c["holdout_distortion"] for c in meeting)
    provenance = json.loads(run("inspect", out, "--json").stdout)["provenance"]
    assert provenance.get("class_blind") == (1 if chosen["class_blind"] else None)


def test_the_exact_mechanism_refuses_a_class_blind_codebook(run, keys, tmp_path):
    data = tmp_path / "cats.csv"
    data.write_text("x,a\nu,m\nv,f\nu,f\nv,m\n")
    result = run("build", data, "--private", "a", "--mechanism", "exact", "--delta-fraction", "0.5",
                 "--class-blind", "--key", keys / "private.pem", "--out", tmp_path / "x.bundle", ok=False)
    assert result.exit_code == 1 and "exact mechanism has none" in result.output
    assert not (tmp_path / "x.bundle").exists()


def test_a_budget_is_required_unless_auto_searches_it(run, keys, ratings_csv, tmp_path):
    result = run("build", ratings_csv, "--private", "gender", "--utility", "recommender", "--clusters", "8",
                 "--key", keys / "private.pem", "--out", tmp_path / "x.bundle", ok=False)
    assert result.exit_code == 1 and "--delta" in result.output


def test_a_build_whose_new_users_leak_several_times_the_in_sample_figure_says_so(run, keys, ratings_csv, tmp_path):
    result = run("build", ratings_csv, "--private", "gender", "--domain", "1:5", "--utility", "recommender",
                 "--clusters", "128", "--delta-fraction", "0.95", "--holdout-folds", "2", "--factors", "4",
                 "--key", keys / "private.pem", "--out", tmp_path / "big.bundle", "--json")
    summary = json.loads(result.stdout)
    assert summary["holdout_leakage_bits"] >= 3 * summary["leakage_bits"]
    assert "warning: new users leak" in result.stderr and "too many clusters" in result.stderr


def test_the_pinned_joint_build_with_too_few_users_refuses_at_once_naming_the_users_needed(run, keys, tmp_path):
    drawn = synthetic_ratings(400, 40, rank=3, density=0.2, classes=14, rng=2)
    path = tmp_path / "joint.csv"
    with open(path, "w", newline="") as handle:
        w = csv.writer(handle, lineterminator="\n")
        w.writerow([*drawn.items, "gender", "ageband"])
        for row, a in zip(drawn.ratings, drawn.private):
            w.writerow(["" if v != v else int(v) for v in row] + ["FM"[a % 2], f"band{a // 2}"])
    started = time.perf_counter()
    result = run("build", path, "--private", "gender,ageband", "--domain", "1:5", "--utility", "recommender",
                 "--clusters", "auto", "--target-auc", "0.55", "--seed", "1", "--key", keys / "private.pem",
                 "--out", tmp_path / "joint.bundle", ok=False)
    assert time.perf_counter() - started < 5.0
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert result.exit_code == 1 and len(errors) == 1 and "too few users" in errors[0]
    assert "in 14 classes" in errors[0] and "needs at least" in errors[0]
    assert not (tmp_path / "joint.bundle").exists()


def test_the_pinned_joint_form_declares_each_column_and_sanitizes_rows_with_or_without_them(run, keys, tmp_path):
    """``--private gender,band --utility recommender --clusters auto --target-auc 0.55``: inspect
    gives each column's new-user leakage, and sanitize reads IN.csv with the private columns or
    without them."""
    drawn = synthetic_ratings(600, 30, rank=3, density=0.3, rng=7, shift=0.8)
    path = tmp_path / "joint.csv"
    with open(path, "w", newline="") as handle:
        w = csv.writer(handle, lineterminator="\n")
        w.writerow([*drawn.items, "gender", "band"])
        for i, (row, a) in enumerate(zip(drawn.ratings, drawn.private)):
            w.writerow(["" if v != v else int(v) for v in row] + [drawn.classes[a], f"b{i % 2}"])
    out = tmp_path / "joint.bundle"
    run("build", path, "--private", "gender,band", "--domain", "1:5", "--utility", "recommender", "--clusters", "auto",
        "--target-auc", "0.55", "--seed", "2", "--key", keys / "private.pem", "--out", out, "--factors", "3",
        "--holdout-folds", "2")
    info = json.loads(run("inspect", out, "--json").stdout)
    assert set(info["holdout_leakage_bits_by_column"]) == {"gender", "band"}
    assert info["holdout_attacker_auc_high"] <= 0.55
    header, *lines = path.read_text().splitlines()
    bare = tmp_path / "bare.csv"
    bare.write_text("\n".join(",".join(line.split(",")[:-2]) for line in [header, *lines[:10]]) + "\n")
    (tmp_path / "full.csv").write_text("\n".join([header, *lines[:10]]) + "\n")
    for given in ("bare.csv", "full.csv"):
        run("sanitize", out, "--trusted", keys / "public.pem", tmp_path / given, tmp_path / f"out-{given}")
        with open(tmp_path / f"out-{given}", newline="") as handle:
            got = list(csv.reader(handle))
        assert got[0] == list(drawn.items) and len(got) == 11


def test_the_new_user_figure_of_a_searched_build_is_a_note_that_does_not_advise_the_search(capsys):
    from privmap.offline.mechanisms.table._command import _warn_new_user_leakage
    metrics = {"holdout_leakage_bits": 0.05, "leakage_bits": 0.01, "clusters": 16, "n": 300}
    _warn_new_user_leakage(metrics, searched=True)
    searched = capsys.readouterr().err
    _warn_new_user_leakage(metrics)
    plain = capsys.readouterr().err
    assert "note: new users leak" in searched and "--clusters auto" not in searched and "target" in searched
    assert "warning: new users leak" in plain
    assert "--clusters auto" in plain


def test_inspect_names_the_rating_columns_and_their_domain(run, recommender_bundle, ratings_csv):
    out, _ = recommender_bundle
    info = json.loads(run("inspect", out, "--json").stdout)
    with open(ratings_csv, newline="") as handle:
        header = next(csv.reader(handle))[:-1]
    assert info["rating_columns"] == header
    assert info["rating_domain"] == {"min": 1, "max": 5, "integer": True, "missing_token": ""}
    assert f"{len(header)} rating columns in [1, 5]" in run("inspect", out).output


@pytest.fixture(scope="module")
def parts(ratings_csv, tmp_path_factory):
    """The ratings as three CSV parts (blank cells kept)."""
    header, *lines = ratings_csv.read_text().splitlines(keepends=True)
    folder = tmp_path_factory.mktemp("rec-parts")
    for i in range(3):
        (folder / f"part{i}.csv").write_text(header + "".join(lines[i::3]))
    return folder


@pytest.fixture(scope="module")
def scheduler():
    """The address of a small in-process Dask cluster (the partitioned builds' refusals that read rows)."""
    pytest.importorskip("distributed")
    from distributed import LocalCluster
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0") as cluster:
        yield cluster.scheduler_address


def partitioned_build(run, keys, data, out, *extra, ok=True):
    return run("build", data, "--private", "gender", "--domain", "1:5", "--utility", "recommender", "--clusters", "8",
               "--delta-fraction", "0.5", "--factors", "3", "--key", keys / "private.pem", "--out", out, *extra, ok=ok)


def test_the_pinned_partitioned_form_builds_a_bundle_sanitize_releases_from(run, keys, parts, tmp_path):
    pytest.importorskip("distributed")
    out = tmp_path / "p.bundle"
    summary = json.loads(partitioned_build(run, keys, parts, out, "--workers", "2", "--json").stdout)
    assert summary["utility"] == "recommender" and summary["rating_columns"] == 60
    assert summary["n"] == 700 - (summary.get("rows_all_missing_dropped") or 0)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.bundle"]          # the factor points are gone
    users = tmp_path / "users.csv"
    header, *lines = (parts / "part0.csv").read_text().splitlines()
    users.write_text("\n".join(line.rsplit(",", 1)[0] for line in [header, *lines[:20]]) + "\n")
    released = tmp_path / "released.csv"
    run("sanitize", out, "--trusted", keys / "public.pem", users, released)
    with open(released, newline="") as handle:
        got = list(csv.reader(handle))
    assert len(got) == 21 and all(cell != "" and 1 <= float(cell) <= 5 for row in got[1:] for cell in row)


def test_the_help_says_a_partitioned_recommender_takes_posteriors_too(run):
    text = " ".join(run("build", "--help-all").output.split())
    assert "[default: posteriors with --utility recommender or ranking, else counts]" in text
    assert "--in-core-limit MIB" in text


def test_the_pinned_partitioned_auto_form_gives_the_one_file_build(run, keys, parts, ratings_csv, tmp_path,
                                                                  monkeypatch):
    """``privmap build DIR ... --clusters auto --target-auc 0.55 --workers 2``: the users' factor
    points fit in core, so the search, the class-blind clusters and the posteriors prior run as on
    one file, and inspect reports the same clusters and new-user figures; stderr tells each stage
    and, as the search goes, its tasks done."""
    pytest.importorskip("distributed")
    from privmap.offline.mechanisms.table import _out_of_core
    monkeypatch.setattr(_out_of_core, "PROGRESS_SECONDS", 0.0)
    common = ["--private", "gender", "--domain", "1:5", "--utility", "recommender", "--clusters", "auto",
              "--target-auc", "0.55", "--seed", "3", "--factors", "3", "--holdout-folds", "3", "--key",
              keys / "private.pem"]
    # the parts hold every third row: the one file is their concatenation, in the parts' order
    whole = tmp_path / "whole.csv"
    whole.write_text("".join(part.read_text() if i == 0 else part.read_text().split("\n", 1)[1]
                             for i, part in enumerate(sorted(parts.iterdir()))))
    run("build", whole, *common, "--out", tmp_path / "one.bundle")
    told = run("build", parts, *common, "--workers", "2", "--out", tmp_path / "parts.bundle").stderr.splitlines()
    stages = [line.split()[1] for line in told if line.startswith("build: ")]
    assert stages[:5] == ["validate", "sample", "factor-model", "fold-in", "gather"]
    assert sum(line.startswith("build: auto-search") and " tasks, K " in line for line in told) > 2
    one, got = (json.loads(run("inspect", tmp_path / name, "--json").stdout) for name in ("one.bundle", "parts.bundle"))
    for figure in ("clusters", "holdout_leakage_bits", "holdout_attacker_auc", "holdout_attacker_auc_high"):
        assert got[figure] == one[figure], figure
    assert got["holdout_attacker_auc_high"] <= 0.55


@pytest.mark.parametrize("extra, says", [
    (["--clusters", "auto", "--target-auc", "0.55"], "--clusters auto or --smoothing auto needs the users' points"),
    (["--robust", "0.95"], "--robust needs the users' points in memory"),
    (["--prior", "posteriors"], "--prior posteriors needs the users' points in memory"),
    (["--class-blind"], "--class-blind clusters needs the users' points in memory"),
])
def test_what_only_the_mapping_in_memory_does_is_refused_out_of_core_in_one_line(run, keys, parts, tmp_path, extra,
                                                                                 says):
    result = partitioned_build(run, keys, parts, tmp_path / "x.bundle", "--workers", "1", "--prior", "counts",
                               "--in-core-limit", "0", *extra, ok=False)
    lines = result.output.strip().splitlines()                 # refused before a cluster starts: nothing else
    assert result.exit_code == 1 and len(lines) == 1 and lines[0].startswith(f"error: {says}")
    assert "(--in-core-limit 0)" in lines[0]
    assert list(tmp_path.iterdir()) == []


def bad_parts(parts, tmp_path, how):
    folder = tmp_path / "bad"
    folder.mkdir()
    for part in sorted(parts.iterdir()):
        (folder / part.name).write_text(part.read_text())
    header, first, *rest = (folder / "part1.csv").read_text().splitlines(keepends=True)
    if how == "columns":
        header = header.replace("item0,", "other0,")
    elif how == "domain":
        first = "9" + first[first.index(","):]
    else:                                                  # no rated row in any part
        for part in sorted(folder.iterdir()):
            head, *lines = part.read_text().splitlines(keepends=True)
            part.write_text(head + "".join("," * 60 + line.rsplit(",", 1)[1] for line in lines))
        return folder
    (folder / "part1.csv").write_text(header + first + "".join(rest))
    return folder


@pytest.mark.parametrize("how, says", [("columns", "columns differ"), ("domain", "outside the declared domain"),
                                       ("blank", "need at least")])
def test_bad_parts_are_refused_in_one_line_with_nothing_written(run, keys, parts, scheduler, tmp_path, how, says):
    data = bad_parts(parts, tmp_path, how)
    out = tmp_path / "out"
    out.mkdir()
    result = partitioned_build(run, keys, data, out / "x.bundle", "--scheduler", scheduler, ok=False)
    assert result.exit_code == 1
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and says in errors[0]              # beside the passes named on stderr
    assert list(out.iterdir()) == []


def test_the_robust_certificate_covers_a_recommender_table(run, keys, ratings_csv, tmp_path):
    result = run("build", ratings_csv, "--private", "gender", "--domain", "1:5", "--utility", "recommender",
                 "--clusters", "8", "--delta-fraction", "0.5", "--factors", "3", "--holdout-folds", "0",
                 "--robust", "0.95", "--key", keys / "private.pem", "--out", tmp_path / "r.bundle", "--json")
    summary = json.loads(result.stdout)
    assert summary["robust_confidence"] == 0.95
    assert summary["robust_leakage_bits"] >= summary["leakage_bits"]

"""``privmap build --private COL1,COL2`` and what reads its bundle: inspect's per-column keys, the
one-line errors, per-column targets of ``--clusters auto``, and the per-column evaluation and curve."""
import csv
import json

import numpy as np
import pytest

ISSUED = ("--issued-at", 1_700_000_000, "--valid-days", 36500)


@pytest.fixture(scope="module")
def joint_csv(tmp_path_factory):
    """600 users: ``sex`` predictable from x1, ``band`` (four values) from nothing."""
    rng = np.random.default_rng(5)
    path = tmp_path_factory.mktemp("jointcli") / "people.csv"
    with path.open("w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["x1", "x2", "sex", "band"])
        for _ in range(600):
            s, b = rng.integers(0, 2), rng.integers(0, 4)
            w.writerow([round(2 * s + rng.normal(0, 0.8), 1), round(rng.normal(0, 1), 1), "FM"[s], f"b{b}"])
    return path


@pytest.fixture(scope="module")
def joint_bundle(tmp_path_factory, joint_csv, keys, run):
    out = tmp_path_factory.mktemp("jointb") / "joint.bundle"
    run("build", joint_csv, "--private", "sex,band", "--clusters", 8, "--delta-fraction", 0.5,
        "--key", keys / "private.pem", "--out", out, *ISSUED)
    return out


def test_inspect_json_gives_the_joints_and_each_columns_leakage(joint_bundle, run):
    info = json.loads(run("inspect", joint_bundle, "--json").output)
    metrics = info["metrics"]
    assert info["private_columns"] == ["sex", "band"]
    assert info["holdout_leakage_bits"] == metrics["holdout_leakage_bits"]
    assert info["holdout_leakage_bits_by_column"] == {c: metrics[f"holdout_leakage_bits[{c}]"] for c in ("sex", "band")}
    assert info["leakage_bits_by_column"] == {c: metrics[f"leakage_bits[{c}]"] for c in ("sex", "band")}
    assert all(v <= info["leakage_bits"] + 1e-12 for v in info["leakage_bits_by_column"].values())


def test_inspect_json_of_a_one_column_bundle_gives_its_column_the_bundles_figures(ratings_bundle, run):
    info = json.loads(run("inspect", ratings_bundle(8, 0.5), "--json").output)
    assert info["leakage_bits_by_column"] == {"gender": info["leakage_bits"]}
    assert info["holdout_leakage_bits_by_column"] == {"gender": info["holdout_leakage_bits"]}


def test_the_joint_bundle_verifies_as_a_device_loads_it(joint_bundle, keys, run):
    info = json.loads(run("verify", joint_bundle, "--trusted", keys / "public.pem", "--json").output)
    assert info["ok"] and info["recomputed_leakage_bits"] <= info["leakage_bits"] + 1e-9


@pytest.mark.parametrize("header", [["x1", "x2", "sex", "band"], ["x1", "x2", "band"], ["x2", "x1"]])
def test_sanitize_reads_in_csv_with_or_without_the_joint_bundles_private_columns(joint_bundle, keys, tmp_path, run,
                                                                                header):
    cells = {"x1": "0.5", "x2": "-1.0", "sex": "F", "band": "b2"}
    infile, outfile = tmp_path / "in.csv", tmp_path / "out.csv"
    infile.write_text(",".join(header) + "\n" + ",".join(cells[h] for h in header) + "\n")
    run("sanitize", joint_bundle, "--trusted", keys / "public.pem", infile, outfile)
    rows = list(csv.reader(outfile.open()))
    assert rows[0] == ["x1", "x2"] and len(rows) == 2


@pytest.mark.parametrize("private, public, message", [
    ("sex,band,sex", None, "column 'sex' is named twice"),
    ("sex,band", "x1,band", "column 'band' cannot be both private and public"),
    ("sex,nope", None, "unknown private column"),
])
def test_a_bad_private_list_is_one_error_line(joint_csv, keys, tmp_path, run, private, public, message):
    result = run("build", joint_csv, "--private", private, *(("--public", public) if public else ()),
                 "--clusters", 4, "--delta-fraction", 0.5, "--key", keys / "private.pem", "--out", tmp_path / "b",
                 ok=False)
    assert result.exit_code == 1
    errors = [line for line in result.output.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and message in errors[0] and result.output.strip().endswith(errors[0]), result.output


def test_more_joint_classes_than_a_device_takes_is_one_error_line(tmp_path, keys, run):
    path = tmp_path / "wide.csv"
    with path.open("w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["x", "a", "b"])
        w.writerows([i % 7, f"a{i // 65}", f"b{i % 65}"] for i in range(65 * 65))
    result = run("build", path, "--private", "a,b", "--clusters", 4, "--delta-fraction", 0.5,
                 "--key", keys / "private.pem", "--out", tmp_path / "b", ok=False)
    assert result.exit_code == 1
    errors = [line for line in result.output.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and "4,225 joint values" in errors[0] and "Limits.max_classes" in errors[0], result.output


def test_a_target_for_a_column_that_is_not_private_is_one_error_line(joint_csv, keys, tmp_path, run):
    result = run("build", joint_csv, "--private", "sex,band", "--clusters", "auto", "--delta-fraction", 0.5,
                 "--target-leakage", "x1=0.01", "--key", keys / "private.pem", "--out", tmp_path / "b", ok=False)
    assert result.exit_code == 1
    assert result.output.strip().splitlines()[-1].startswith("error: --target-leakage x1=...: 'x1' is not a private")


def test_auto_meets_every_named_columns_target(joint_csv, keys, tmp_path, run):
    """--target-leakage BITS (the joint) and COL=BITS (a column): the chosen candidate's declared
    figures meet both, and a candidate that meets the joint's alone is not enough."""
    out = tmp_path / "auto.bundle"
    result = run("build", joint_csv, "--private", "sex,band", "--clusters", "auto", "--delta-fraction", 0.7,
                 "--holdout-folds", 2, "--target-leakage", "0.5", "--target-leakage", "sex=0.002",
                 "--key", keys / "private.pem", "--out", out, "--json", *ISSUED)
    summary = json.loads(result.stdout)
    assert summary["auto"]["target_leakage_bits_by_column"] == {"sex": 0.002}
    chosen = [c for c in summary["auto"]["candidates"] if c["chosen"]][0]
    if chosen["meets_target"]:
        assert summary["holdout_leakage_bits_by_column"]["sex"] <= 0.002
        assert summary["holdout_leakage_bits"] <= 0.5
    assert all(c["meets_target"] == (c["holdout_leakage_bits"] <= 0.5
                                     and c["holdout_leakage_bits_by_column"]["sex"] <= 0.002)
               for c in summary["auto"]["candidates"] if "error" not in c)


def csv_parts(path, folder, parts=3):
    """The rows of the CSV at ``path`` as ``parts`` files in ``folder``, in order, each with the header."""
    header, *lines = path.read_text().splitlines(keepends=True)
    folder.mkdir()
    for i in range(parts):
        (folder / f"p{i}.csv").write_text(header + "".join(lines[i * len(lines) // parts:(i + 1) * len(lines) // parts]))
    return folder


def test_a_partitioned_joint_build_gives_the_one_file_bundles_figures(joint_csv, joint_bundle, keys, tmp_path, run):
    """The partitions' rows labelled with their joint class, the classes ordered as the in-memory
    reader orders them, and the rows mapped in core: the same classes and per-column figures."""
    pytest.importorskip("distributed")
    out = tmp_path / "parts.bundle"
    run("build", csv_parts(joint_csv, tmp_path / "parts"), "--private", "sex,band", "--clusters", 8,
        "--delta-fraction", 0.5, "--workers", 1, "--key", keys / "private.pem", "--out", out, *ISSUED)
    one, got = (json.loads(run("inspect", path, "--json").output) for path in (joint_bundle, out))
    assert got["private_columns"] == ["sex", "band"] and got["classes"] == one["classes"]
    for figure in ("leakage_bits", "holdout_leakage_bits", "holdout_leakage_bits_by_column", "leakage_bits_by_column"):
        assert got[figure] == one[figure], figure


def test_several_private_columns_out_of_core_are_refused_in_one_line(joint_csv, keys, tmp_path, run):
    result = run("build", csv_parts(joint_csv, tmp_path / "parts"), "--private", "sex,band", "--clusters", 8,
                 "--delta-fraction", 0.5, "--workers", 1, "--in-core-limit", 0, "--key", keys / "private.pem",
                 "--out", tmp_path / "x.bundle", ok=False)
    lines = result.output.strip().splitlines()
    assert result.exit_code == 1 and len(lines) == 1
    assert lines[0].startswith("error: several private columns need the users' points in memory (--in-core-limit 0)")


def test_evaluate_reports_each_column_with_its_attacker(joint_bundle, joint_csv, run):
    report = json.loads(run("evaluate", joint_bundle, joint_csv, "--private", "sex,band", "--json").output)
    assert set(report["columns"]) == {"sex", "band"}
    band, sex = report["columns"]["band"], report["columns"]["sex"]
    assert band["classes"] == ["b0", "b1", "b2", "b3"] and band["attacker"]["auc"] == "one-vs-rest macro"
    assert sex["attacker"]["auc"] == "plain"
    for c in (band, sex):
        assert 0.0 <= c["attacker"]["after"]["roc_auc"] <= 1.0 and 0.0 < c["majority"] <= c["map_accuracy_after"]
        assert c["leakage_bits"] <= report["leakage_bits"] + 1e-12
    assert sex["attacker"]["before"]["roc_auc"] > 0.8                 # sex is predictable from the raw rows
    declared = report["declared"]
    assert set(declared["max_output_leakage_by_class_bits"]) == set(report["classes"])
    assert set(declared["holdout_leakage_bits_by_column"]) == {"sex", "band"}
    text = run("evaluate", joint_bundle, joint_csv, "--private", "sex,band").output
    assert "joint (sex, band)" in text and "column 'band' alone" in text


def test_evaluate_of_a_joint_bundle_needs_its_columns(joint_bundle, joint_csv, run):
    result = run("evaluate", joint_bundle, joint_csv, "--private", "sex", ok=False)
    assert result.exit_code == 1 and "give --private sex,band" in result.output


def test_curve_draws_each_column_beside_the_joint(joint_csv, tmp_path, run):
    csv_path = tmp_path / "curve.csv"
    result = run("curve", joint_csv, "--private", "sex,band", "-k", 6, "--deltas", "0.5,1.5", "--no-attacker",
                 "--csv", csv_path, "--png", tmp_path / "curve.png", "--json")
    points = json.loads(result.stdout)["points"]
    assert all(p["leakage_bits[sex]"] <= p["leakage_bits"] + 1e-12 for p in points)
    with csv_path.open() as f:
        header = next(csv.reader(f))
    assert "leakage_bits[band]" in header and "lr_auc[sex]" in header

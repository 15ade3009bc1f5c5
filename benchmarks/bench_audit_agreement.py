"""``privmap evaluate --train`` beside an independent run of the service protocol, on held-out users.

For each data set and split seed the users are split 70/30 (training users, new users); each
bundle configuration is built on the training file with ``privmap build``; then

- the audit: ``privmap evaluate B --trusted PUB TEST.csv --train TRAIN.csv --private COL --json``
  (value kept by rating error and by ranking, the runs' mean and the 95 % interval where one more
  run of the protocol lands; the strongest attacker's AUC);
- the outside check: ``service_protocol.py``, written from SERVICE.md alone (scikit-surprise SVD,
  a hand-written EASE, scikit-learn's attackers, the rows released by the device runtime), run
  once per ``--protocol-seeds`` seed, with hidden cells, draws and initialisation of its own.

It prints both side by side, whether each outside value kept lies in the audit's interval and the
strongest-attacker AUCs' difference (target: within 0.02). Data: InstEval (bundled, ``studage``
private, 4 classes) and a synthetic movie-like set (:func:`privmap.offline.data.synthetic_ratings`,
2 classes), where the true rows beat nothing by more than InstEval's few hundredths of a star.

    OMP_NUM_THREADS=1 python benchmarks/bench_audit_agreement.py --splits 0 --protocol-seeds 1 2
"""
from __future__ import annotations

import argparse
import json
import pathlib
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import service_protocol  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
INSTEVAL = ROOT / "data" / "insteval" / "InstEval_wide_top500.csv"
#: Bundle configurations: a name and the build's options besides the data, key and output.
CONFIGS = {
    "recommender K=64": ["--utility", "recommender", "--clusters", "64", "--delta-fraction", "0.5"],
    "quantized K=16": ["--clusters", "16", "--delta-fraction", "0.5"],
}


#: The command line of the interpreter's environment.
PRIVMAP = pathlib.Path(sys.executable).parent / "privmap"


def _privmap(*args) -> str:
    done = subprocess.run([str(PRIVMAP), *map(str, args)], capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"privmap {' '.join(map(str, args[:2]))} failed:\n{done.stderr[-2000:]}")
    return done.stdout


def _datasets(folder: pathlib.Path) -> dict:
    """Name -> (labelled CSV, private column, domain)."""
    import pandas as pd

    from privmap.offline.data import synthetic_ratings
    insteval = folder / "insteval.csv"
    pd.read_csv(INSTEVAL).drop(columns=["s"]).to_csv(insteval, index=False)
    synthetic = synthetic_ratings(3000, 300, rank=5, density=0.06, classes=2, rng=11).write_csv(
        folder / "synthetic.csv", private="group")
    return {"InstEval (studage)": (insteval, "studage", "1:5"), "synthetic (2 classes)": (synthetic, "group", "1:5")}


def _split(path: pathlib.Path, seed: int, folder: pathlib.Path):
    """TRAIN.csv and TEST.csv: the users split 70/30 by ``seed``."""
    lines = path.read_text().splitlines()
    order = np.random.default_rng(seed).permutation(len(lines) - 1) + 1
    cut = int(0.7 * order.size)
    out = []
    for name, part in (("train", order[:cut]), ("test", order[cut:])):
        target = folder / f"{path.stem}-{seed}-{name}.csv"
        target.write_text("\n".join([lines[0], *(lines[i] for i in sorted(part))]) + "\n")
        out.append(target)
    return out


def _matrix(path: pathlib.Path, private: str, classes: list):
    import pandas as pd
    frame = pd.read_csv(path)
    y = frame.pop(private).astype(str).map({c: i for i, c in enumerate(classes)}).to_numpy()
    R = frame.to_numpy(float)
    kept = ~np.isnan(R).all(axis=1)               # a build leaves out rows with every cell blank
    return R[kept], y[kept]


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _cell(value, interval=None) -> str:
    if value is None:
        return "-"
    return f"{value:.3f}" + ("" if interval is None else f" [{interval[0]:.3f}, {interval[1]:.3f}]")


def _inside(value, interval) -> str:
    if value is None or interval is None:
        return "-"
    return "yes" if interval[0] <= value <= interval[1] else "NO"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--splits", type=int, nargs="+", default=[0])
    parser.add_argument("--protocol-seeds", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--configs", nargs="+", default=list(CONFIGS), choices=list(CONFIGS))
    args = parser.parse_args()
    from privmap.device import Keyring, read_bundle_file
    with tempfile.TemporaryDirectory() as tmp:
        folder = pathlib.Path(tmp)
        _privmap("keygen", folder / "keys")
        keyring = Keyring.from_pem_files(folder / "keys" / "public.pem")
        print(f"{'data':<22}{'split':>6} {'bundle':<18}{'who':<16}{'value kept':>26}{'in':>4}{'ranking kept':>26}"
              f"{'in':>4}{'strongest AUC':>15}{'diff':>7}{'cpu s':>7}", flush=True)
        for data_name, (path, private, domain) in _datasets(folder).items():
            for split in args.splits:
                train, test = _split(path, split, folder)
                for config in args.configs:
                    bundle = folder / "b.bundle"
                    _privmap("build", train, "--private", private, "--domain", domain, *CONFIGS[config],
                             "--key", folder / "keys" / "private.pem", "--out", bundle)
                    started = _children_cpu()
                    audit = json.loads(_privmap("evaluate", bundle, "--trusted", folder / "keys" / "public.pem",
                                                test, "--train", train, "--private", private, "--json"))
                    head = f"{data_name:<22}{split:>6} {config:<18}"
                    print(f"{head}{'evaluate --train':<16}{_cell(audit['value_kept'], audit['value_kept_interval']):>26}"
                          f"{'':>4}{_cell(audit['ranking_value_kept'], audit['ranking_value_kept_interval']):>26}"
                          f"{'':>4}{audit['attacker_auc']:>9.3f} {audit['attacker'][:5]:<5}{'':>7}"
                          f"{_children_cpu() - started:>7.0f}", flush=True)
                    device = read_bundle_file(bundle, keyring)
                    classes = [str(c) for c in json.loads(_privmap("inspect", bundle, "--json"))["classes"]]
                    R_train, y_train = _matrix(train, private, classes)
                    R_test, y_test = _matrix(test, private, classes)
                    for seed in args.protocol_seeds:
                        started = time.process_time()
                        outside = service_protocol.protocol(device, R_train, y_train, R_test, y_test, len(classes),
                                                            seed=seed)
                        diff = outside["attacker_auc"] - audit["attacker_auc"]
                        print(f"{head}{f'outside, seed {seed}':<16}{_cell(outside['value_kept']):>26}"
                              f"{_inside(outside['value_kept'], audit['value_kept_interval']):>4}"
                              f"{_cell(outside['ranking_value_kept']):>26}"
                              f"{_inside(outside['ranking_value_kept'], audit['ranking_value_kept_interval']):>4}"
                              f"{outside['attacker_auc']:>9.3f} {outside['attacker'][:5]:<5}{diff:>+7.3f}"
                              f"{time.process_time() - started:>7.0f}", flush=True)


if __name__ == "__main__":
    main()

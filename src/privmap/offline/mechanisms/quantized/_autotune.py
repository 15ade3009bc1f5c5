"""``--clusters auto`` and ``--smoothing auto``: choose K and the prior's smoothing for new users.

A larger alphabet fits the training prior more closely: in-sample it lowers the
distortion at a given leakage, but the table then leaks more on users who were not
in the data. Each candidate (K, smoothing) is therefore judged out of sample, by
the cross-fitting of :mod:`privmap.offline.mechanisms.table._holdout` (the build's own steps on k - 1 folds, the
leakage, distortion and the strongest attacker's ROC AUC measured on the held-out fold: the
worst of the Bayes attacker over the release alphabet, gradient boosting and logistic regression,
:mod:`privmap.offline._strongest`).

**Candidates.** K = 4, 8, 16, ... up to the largest K the data supports: every
cluster can hold :data:`MIN_USERS_PER_CLUSTER` training rows on average (K <= n (k - 1)
/ (k m), n rows, k folds, m = 32; m = 4 with the posteriors prior, whose p(a | c) does not
rest on a cluster's own rows), and K is at most the number of distinct rows (a
data set too small for K = 4 gets that one candidate alone). Every candidate shares
the build's k folds (``holdout_folds``, drawn from the seed), and all (candidate, fold)
pairs are tasks shared by this process and its fold workers. A candidate whose plain build
would start its folds from its answers (:func:`privmap.offline.mechanisms.table._reuse.starts_folds`: large K) is first built
on all the rows, and its folds start from that build, as a plain build's do; so the chosen
candidate's estimate is always the one a plain build at its K declares, and a chosen candidate
built that way is the build the bundle ships (:attr:`Choice.solved`). (The folds' k-means do not start from the
full-data centres: that start was measured to make the held-out distortion optimistic, the
more so at larger K; :mod:`privmap.offline.mechanisms.table._holdout`.) A fold's one-start k-means
at a K is a function of its training rows, K and the seed alone, so it is made once and reused by
every budget fraction that K is judged at (:class:`~privmap.offline.mechanisms.table.FoldKMeans`):
the same clusters, once.

**Choice.** The candidate of least held-out distortion among those that meet the
privacy target wins (ties: smaller K, then less smoothing). The target is
``--target-leakage`` and/or ``--target-auc`` when given; otherwise the default
target, new-user leakage at most :data:`DEFAULT_TARGET_FRACTION` (1 %) of H(A), the
entropy of the private attribute in the data (what releasing it outright would leak;
0.01 bits for a balanced binary attribute). A target is met by the candidate's
cross-fitted ``holdout_leakage_bits`` as the bundle declares it (rounded to the payload's
significant digits, :func:`declared_bits`), and by the one-sided upper confidence bound of its
cross-fitted attacker AUC (``holdout_attacker_auc_high``, DeLong's, at the folds' confidence, the
largest of the three attackers' bounds):
the winner is picked among many candidates on noisy estimates, and the one nearest the target is
the most likely to sit there by chance, so an AUC target is held to the figure new users can be
promised, not to the estimate; the build of the chosen candidate writes
that very estimate into the bundle (:attr:`Choice.holdout`), so the declared new-user figure
meets it. With several private columns, ``--target-leakage COL=BITS`` adds a target on one
column's cross-fitted ``holdout_leakage_bits[COL]`` (:attr:`Auto.column_targets`); a candidate
meets the targets when it meets every one given (the joint's, each column's, the AUC). If no
candidate meets the target, the one nearest it by the target's own measure is chosen and flagged
(``meets_target`` false everywhere; :meth:`_Targets.shortfall`: the largest excess over a target,
a leakage's as a fraction of its bits, an AUC's as a fraction of its room above chance, 0.5), and a
build fails closed on it (:func:`._build.build_points`) unless ``Auto.allow_unmet``.

The budget (``delta`` or ``delta_fraction``) is the build's own for every
candidate, unless the build gives none: then the budget is searched too, each K with
every fraction of :data:`CANDIDATE_DELTA_FRACTIONS` of the perfect-privacy distortion, so
that an operator states the privacy wanted (the target) rather than a budget in the metric's
unit; on a tie the larger fraction (the more private table) wins. The fractions are tried from
the largest down, a K's smaller fraction only while its larger one met the target
(:func:`_search_budgets`: below a fraction that failed none would meet it). A class-blind codebook
(:mod:`privmap.offline.mechanisms.table._class_blind`) adds the fraction 0, its clusters released as they are, and tries it first
(:data:`CLASS_BLIND_DELTA_FRACTIONS`): a K that meets the target there needs no budget. With
``Auto.class_blind`` naming both codebooks, each is searched so, and the least held-out distortion
of either wins (the rows say ``class_blind``). The grid's steps are
coarse, so the budget of the grid's best (K, smoothing) is then bisected :data:`REFINE_STEPS`
times below its fraction (:func:`_refine_budget`), and the least held-out distortion among all
candidates wins. The search is deterministic given the options' seed.

**Attackers on demand.** Of the three attackers the Bayes attacker costs next to nothing, and
gradient boosting and logistic regression about 40 % of the search: each fold scores the Bayes
attacker on its releases, and the other two run on the same releases only where the search reads
a candidate's status and they can change it (:class:`_Run`: not for a candidate that fails on its
leakage or the Bayes bound, nor for one that cannot be chosen). The choice, its estimate and so the
bundle are those of judging every candidate fully; the rows say which candidates were attacked.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..._errors import BuildError
from ..._information import mutual_information_bits
from ...data import Dataset
from ..table import (
    BuildStart,
    HoldoutLeakage,
    InMemoryRows,
    PendingAttackers,
    Solved,
    attack_pending,
    cross_fitted_many,
    solve_rows,
    starts_folds,
)
from ._options import AUTO_NEEDS_FOLDS, QuantizedOptions

#: Average training rows per cluster the largest candidate K must leave (the data's support).
MIN_USERS_PER_CLUSTER = 32
#: The same with the posteriors prior (``--prior posteriors``): a classifier pools every row, so a
#: cluster's p(a | c) no longer rests on its own few rows, and finer alphabets can serve new users.
MIN_USERS_PER_CLUSTER_POSTERIORS = 4
#: The smallest candidate K (doubled up to the largest the data supports).
SMALLEST_CLUSTERS = 4
#: Pseudo-counts tried by ``--smoothing auto``.
CANDIDATE_SMOOTHING = (0.0, 0.5, 2.0)
#: Fractions of the perfect-privacy distortion tried when the build gives no budget.
CANDIDATE_DELTA_FRACTIONS = (0.3, 0.5, 0.7, 0.9)
#: The same with a class-blind codebook (:mod:`privmap.offline.mechanisms.table._class_blind`), which starts at 0: its clusters
#: alone, released as they are (the identity table), may already meet the target.
CLASS_BLIND_DELTA_FRACTIONS = (0.0, *CANDIDATE_DELTA_FRACTIONS)
#: Bisection steps of the budget between the grid's best fraction and the next smaller one
#: (:func:`_refine_budget`).
REFINE_STEPS = 2
#: Default privacy target without ``--target-leakage`` / ``--target-auc``: new-user leakage at most this
#: fraction of H(A) (bits).
DEFAULT_TARGET_FRACTION = 0.01


@dataclass(frozen=True)
class Choice:
    """The chosen (K, smoothing), every candidate's figures, and what the chosen build reuses.

    ``candidates`` holds one dict per candidate: ``clusters`` (K asked for), ``smoothing``,
    ``holdout_leakage_bits``, ``holdout_leakage_high_bits``, ``holdout_distortion``,
    ``holdout_attacker_auc``, ``holdout_attacker_auc_high``, ``holdout_attacker`` (the strongest
    attacker's name, :mod:`privmap.offline._strongest`), ``meets_target`` and ``chosen``
    (bools), or ``error`` when that candidate could not be built; with several private columns also
    ``holdout_leakage_bits_by_column`` (column -> bits). A candidate whose costly attackers the
    search did not need (:class:`_Run`) has ``attacked`` ("bayes": the Bayes attacker alone),
    ``holdout_attacker_auc_bayes`` and ``holdout_attacker_auc_high_bayes`` instead of the
    strongest attacker's three figures, ``unattacked`` (why, :data:`UNATTACKED`), ``meets_target`` None
    where the others would have decided it, and ``tried_as_if_met`` (a fraction) where it was tried
    below a budget whose status was not needed; the chosen candidate always has all three attackers'.
    ``column_targets`` maps each column given a target to its bits. ``target_leakage_bits`` is the leakage target applied
    (given, or the default's value); ``target_source`` says which ("given" or "default").
    ``holdout`` is the chosen candidate's cross-fitted estimate, which its build writes as it is,
    and ``solved`` its build on all the rows when the search made one (None otherwise), which the
    bundle ships (``build_kwargs``). ``searched_users`` is set when the search judged a sample
    of the users (:func:`._build.search_sample`): its candidates' figures are the sample's, and
    the build measures the chosen one again over every user. ``fold_costs`` holds what every (candidate, fold) task cost,
    as :attr:`privmap.offline.mechanisms.table._holdout.HoldoutLeakage.fold_costs` gives it, and ``candidate_costs`` one dict per
    candidate: ``clusters``, ``smoothing`` and ``fold_cpu_seconds`` (its folds' CPU seconds
    together); neither is compared, and neither is in :meth:`summary` (the search's outcome,
    reproducible from the seed, where CPU seconds are not).
    """

    clusters: int
    smoothing: float
    target_leakage_bits: float | None
    candidates: list
    target_auc: float | None = None
    delta_fraction: float | None = None
    target_source: str = "default"
    holdout: HoldoutLeakage | None = None
    solved: Solved | None = None
    min_users_per_cluster: int = MIN_USERS_PER_CLUSTER
    column_targets: dict = field(default_factory=dict)
    class_blind: bool | None = None
    searched_users: int | None = None
    fold_costs: tuple = field(default=(), compare=False)
    candidate_costs: tuple = field(default=(), compare=False)

    @property
    def met(self) -> bool:
        """Whether some candidate met the target (the chosen one, then)."""
        return any(r.get("meets_target") for r in self.candidates)

    def unmet_message(self, *, shipped: bool = False) -> str:
        """One line for a search whose target no candidate met.

        It gives the figures nearest the target (the chosen candidate's) and what to try;
        ``shipped``: that candidate was built anyway.
        """
        best = next(r for r in self.candidates if r.get("chosen"))
        reached = []
        if self.target_leakage_bits is not None:
            reached.append(f"new-user leakage {best['holdout_leakage_bits']:.5f} bits against "
                           f"{self.target_leakage_bits:.5f}")
        for column, bits in self.column_targets.items():
            reached.append(f"{column}'s {best['holdout_leakage_bits_by_column'][column]:.5f} bits against {bits:.5f}")
        if self.target_auc is not None:
            reached.append(f"attacker AUC bound {best['holdout_attacker_auc_high']:.4f} ({best['holdout_attacker']}) "
                           f"against {self.target_auc:.4f}")
        advice = "loosen the target" + (", protect fewer private columns" if self.column_targets else "") \
            + " or give more training users"
        return (f"no candidate of the auto search meets the privacy target; the nearest (K = {best['clusters']}) "
                f"reached {', '.join(reached)}: "
                + (f"built as --allow-unmet asks ({advice} to meet it)" if shipped
                   else f"{advice}, or pass --allow-unmet to build that candidate"))

    def met_by(self, est: HoldoutLeakage) -> bool:
        """Whether a cross-fitted estimate (the chosen candidate's over every user) meets the targets."""
        return _Targets(leakage_bits=self.target_leakage_bits, auc=self.target_auc,
                        columns=dict(self.column_targets)).met_by(est)

    def unmet_over_all(self, est: HoldoutLeakage, users: int) -> str:
        """One line for a choice that met the target on the search's sample only.

        The choice met it on :attr:`searched_users`, but its estimate ``est`` over all ``users``
        misses it.
        """
        reached = []
        if self.target_leakage_bits is not None:
            reached.append(f"new-user leakage {est.leakage_bits:.5f} bits against {self.target_leakage_bits:.5f}")
        by_column = est.column_bits()
        reached += [f"{column}'s {by_column[column]:.5f} bits against {bits:.5f}"
                    for column, bits in self.column_targets.items()]
        if self.target_auc is not None and est.attacker_auc_high is not None:
            reached.append(f"attacker AUC bound {est.attacker_auc_high:.4f} ({est.attacker}) "
                           f"against {self.target_auc:.4f}")
        return (f"the auto search's choice (K = {self.clusters}) met the privacy target on its sample of "
                f"{self.searched_users:,} users but not over all {users:,}: {', '.join(reached)}; loosen the "
                "target, or pass --allow-unmet to build it")

    def build_kwargs(self) -> dict:
        """Keyword arguments of :func:`privmap.offline.mechanisms.table._pipeline.build_rows` for the chosen candidate."""
        return {"holdout": self.holdout, "solved": self.solved}

    def chosen(self, options: QuantizedOptions) -> QuantizedOptions:
        """``options`` (those searched with) as the chosen candidate's, with no search left to run.

        They take its K, smoothing and, when searched, budget fraction and codebook.
        """
        blind = options.class_blind if self.class_blind is None else self.class_blind
        if self.delta_fraction is None:
            return dataclasses.replace(options, clusters=self.clusters, smoothing=self.smoothing, auto=None,
                                       class_blind=blind)
        return dataclasses.replace(options, clusters=self.clusters, smoothing=self.smoothing, auto=None, delta=None,
                                   delta_fraction=self.delta_fraction, class_blind=blind)

    def summary(self) -> dict:
        """The search for ``build --json``: choice, targets and the candidate table."""
        return {"clusters": self.clusters, "smoothing": self.smoothing,
                **({"delta_fraction": self.delta_fraction} if self.delta_fraction is not None else {}),
                **({"class_blind": self.class_blind} if self.class_blind is not None else {}),
                "target_leakage_bits": self.target_leakage_bits, "target_auc": self.target_auc,
                "target_source": self.target_source, "min_users_per_cluster": self.min_users_per_cluster,
                **({"searched_users": self.searched_users} if self.searched_users is not None else {}),
                **({"target_leakage_bits_by_column": dict(self.column_targets)} if self.column_targets else {}),
                "candidates": self.candidates}


def candidate_clusters(n: int, distinct: int, folds: int, min_users: int = MIN_USERS_PER_CLUSTER) -> list[int]:
    """The numbers of clusters a search tries: K = 4, 8, 16, ... as far as the users allow.

    K grows while K <= n (folds - 1) / (folds * min_users) and K <= ``distinct``;
    ``[min(4, distinct)]`` when even 4 is beyond that (module docstring).
    """
    largest = min(distinct, int(n * (folds - 1) / folds) // min_users)
    ks, k = [], SMALLEST_CLUSTERS
    while k <= largest:
        ks.append(k)
        k *= 2
    return ks or [max(1, min(SMALLEST_CLUSTERS, distinct))]


def min_users_for(options) -> int:
    """Average training rows per cluster the largest candidate K leaves, by the options' prior."""
    return MIN_USERS_PER_CLUSTER_POSTERIORS if options.prior == "posteriors" else MIN_USERS_PER_CLUSTER


def declared_bits(bits: float) -> float:
    """``bits`` as the bundle declares it: the figure a target is checked against.

    It is rounded to the payload's significant digits
    (:func:`privmap.offline._canonical.canonical_float`), so that a declared new-user leakage is
    never above the target it was chosen to meet.
    """
    from ..._canonical import canonical_float
    return canonical_float(bits)


def default_target_bits(dataset: Dataset) -> float:
    """:data:`DEFAULT_TARGET_FRACTION` of H(A), the private attribute's entropy in ``dataset`` (bits)."""
    counts = np.bincount(dataset.private, minlength=len(dataset.classes)).astype(float)
    return DEFAULT_TARGET_FRACTION * mutual_information_bits(np.diag(counts / counts.sum()))   # I(A; A) = H(A)


def choose(dataset: Dataset, options: QuantizedOptions, *, clusters: Sequence[int] | None = None,
           smoothing: Sequence[float] | None = None, target_leakage_bits: float | None = None,
           target_auc: float | None = None, delta_fractions: Sequence[float] | None = None,
           jobs: int | None = None, progress: Callable[[int, int, str], None] | None = None) -> Choice:
    """Pick the alphabet size and smoothing that serve new users best (module docstring).

    Parameters
    ----------
    dataset : Dataset
    options : QuantizedOptions
        The build's options; ``clusters`` and ``smoothing`` are replaced by each candidate's,
        ``cross_fitting`` (>= 2 folds) gives the folds every candidate shares, ``auto`` (if
        any) the targets.
    clusters : sequence of int, optional
        Candidate K (default: the options' own K, or :func:`candidate_clusters` when it is None).
    smoothing : sequence of float, optional
        Candidate pseudo-counts (default: the options' own smoothing, or
        :data:`CANDIDATE_SMOOTHING` when it is None).
    target_leakage_bits : float, optional
        Out-of-sample leakage to stay under (bits; default: ``options.auto``'s).
    target_auc : float, optional
        Out-of-sample attacker ROC AUC to stay under (default: ``options.auto``'s). Without
        either target the default target (:func:`default_target_bits`) applies.
    delta_fractions : sequence of float, optional
        Candidate budgets, as fractions of the perfect-privacy distortion, each tried with every
        K (default: the options' own budget, or when it gives neither :data:`CANDIDATE_DELTA_FRACTIONS`,
        :data:`CLASS_BLIND_DELTA_FRACTIONS` with a class-blind codebook). The chosen one is :attr:`Choice.delta_fraction`.
    jobs : int, optional
        Processes that run the folds, this one included (:func:`privmap.offline.mechanisms.table._holdout.fold_jobs`).
    progress : callable(done: int, total: int, current: str), optional
        Told the number of tasks done (the builds of candidates whose folds start from them, then
        each (candidate, fold)), of those planned so far, and the candidate being judged (its K,
        smoothing, budget and codebook, :func:`candidate_label`).

    Raises
    ------
    BuildError
        No cross-fitting, too few rows of a class for the folds, or no candidate could be built.
    """
    folds = options.folds
    if folds < 2:
        raise BuildError(AUTO_NEEDS_FOLDS)
    if clusters is None and options.clusters is not None:
        clusters = (options.clusters,)
    if smoothing is None:
        smoothing = CANDIDATE_SMOOTHING if options.smoothing is None else (options.smoothing,)
    grid = delta_fractions is None and options.searches_budget
    if options.auto is not None and target_leakage_bits is None and target_auc is None:
        target_leakage_bits, target_auc = options.auto.target_leakage_bits, options.auto.target_auc
    column_targets = _column_targets(dataset, options)
    if column_targets is None:            # one private column, named: its target is the joint's
        column_targets, target_leakage_bits = {}, _single_column_target(dataset, options, target_leakage_bits)
    distinct = np.unique(dataset.public, axis=0).shape[0]
    ks = (sorted({int(k) for k in clusters if 1 <= k <= distinct}) if clusters
          else candidate_clusters(dataset.n, distinct, folds, min_users_for(options))) or [distinct]
    ss = sorted({float(s) for s in smoothing})
    source = "given" if target_leakage_bits is not None or target_auc is not None or column_targets else "default"
    if source == "default":
        target_leakage_bits = default_target_bits(dataset)
    targets = _Targets(leakage_bits=target_leakage_bits, auc=target_auc, columns=column_targets)
    blinds = options.auto.class_blind if options.auto is not None and options.auto.class_blind else None
    run = _Run(dataset, options, targets, jobs=jobs, progress=progress, tasks=0)
    plans = _plans(options, ks, ss, delta_fractions, grid, blinds)
    run.tasks = sum(plan[-1] for plan in plans)
    judged = _judge_plans(run, plans, ks, ss, blinds)
    rows = [row for row, _, _ in judged]
    ok = [r for r in rows if "error" not in r]
    if not ok:
        raise BuildError("--clusters auto: no candidate could be built: " + rows[0]["error"])
    best = run.best(ok)
    if best is None:                      # none meets: the nearest, on every row's full figures
        if targets.auc is not None:
            run.attack(ok)
        best = _best(ok, targets)
    kept = run.finish(judged, best)        # attacks the chosen row: estimates are read after it
    tried = [(r, run.estimate(r, e)) for r, e, _ in judged if "error" not in r]   # dropped rows cost too
    rows = [row for row, _, _ in kept]
    for r in rows:
        r["chosen"] = r is best
    run.tasks = run.done                  # what the search planned and did not prune is done
    run.tell(run.done, (best["clusters"], best["smoothing"], best.get("delta_fraction")), best.get("class_blind"))
    estimate, build = run.estimate(best, kept[rows.index(best)][1]), kept[rows.index(best)][2]
    return Choice(clusters=best["clusters"], smoothing=best["smoothing"], target_leakage_bits=target_leakage_bits,
                  candidates=rows, target_auc=target_auc, delta_fraction=best.get("delta_fraction"),
                  min_users_per_cluster=min_users_for(options), target_source=source, holdout=estimate,
                  column_targets=column_targets, class_blind=best.get("class_blind"),
                  solved=build if isinstance(build, Solved) else None,
                  fold_costs=tuple(c for _, e in tried for c in e.fold_costs),
                  candidate_costs=tuple(
                      {"clusters": r["clusters"], "smoothing": r["smoothing"],
                       "fold_cpu_seconds": round(sum(c["cpu_seconds"] for c in e.fold_costs), 3)} for r, e in tried))


def _plans(options: QuantizedOptions, ks: list[int], ss: list[float], delta_fractions, grid: bool,
           blinds) -> list[tuple]:
    """The search's plan for each codebook searched (``blinds``, else the options' own).

    One ``(options, fractions, triples, searching, tasks)`` each, with the codebook's options, its
    budget fractions (``[None]``: the build's own budget), every (K, smoothing, fraction), whether
    the budget is searched, and the tasks it plans (so that progress counts against the whole search
    from the start).
    """
    folds = options.folds
    plans = []
    for blind in blinds or (options.class_blind,):
        codebook = dataclasses.replace(options, class_blind=blind)
        fractions = delta_fractions if not grid else (CLASS_BLIND_DELTA_FRACTIONS if blind
                                                      else CANDIDATE_DELTA_FRACTIONS)
        fs = sorted({float(f) for f in fractions}) if fractions else [None]
        triples = [(k, s, f) for k in ks for s in ss for f in fs]
        searching = fs[0] is not None and len(fs) > 1
        plans.append((codebook, fs, triples, searching, sum(_tasks(c, folds) for c in _candidates(codebook, triples))
                      + (REFINE_STEPS * (folds + 1) if searching else 0)))
    return plans


def _judge_plans(run: _Run, plans: list[tuple], ks: list[int], ss: list[float], blinds) -> list:
    """Every candidate of ``plans`` judged, listed in plan order.

    One ``(row, estimate or BuildError, build or None)`` each, a searched budget by
    :func:`_search_budgets` then :func:`_refine_budget`, and each row marked with its codebook
    when several are searched. A class-blind codebook is judged first: its fraction 0 (its clusters
    as they are) is where searches usually find the least distortion that meets the target, and once
    a candidate is known to meet it, the costly attackers of every candidate of more distortion are
    spared (:class:`_Run`). The rows are listed in plan order all the same (:meth:`_Run.place`), so
    that equal keys are settled as judging in plan order settles them.
    """
    found: dict = {}
    order = sorted(range(len(plans)), key=lambda i: not plans[i][0].class_blind)
    for n, i in enumerate(order):
        codebook, fs, triples, searching, _ = plans[i]
        run.options, run.pending = codebook, sum(plans[j][-1] for j in order[n + 1:])
        run.place(i)
        if searching:
            found[i] = _search_budgets(run, [(k, s) for k in ks for s in ss], fs)
            found[i] += _refine_budget(run, found[i])
        else:
            found[i] = run.judge(triples)
        if blinds:
            for row, _, _ in found[i]:
                row["class_blind"] = codebook.class_blind
    return [entry for i in range(len(plans)) for entry in found[i]]


@dataclass(frozen=True)
class _Targets:
    """What a candidate must meet (module docstring).

    The joint leakage (bits, or None), the attacker AUC's upper confidence bound (or None), and
    each named column's leakage (column -> bits).
    """

    leakage_bits: float | None
    auc: float | None
    columns: dict

    def shortfall(self, row: dict) -> float:
        """How far a candidate's ``row`` misses the targets, by each target's own measure.

        The largest excess over one, a leakage's (declared bits) as a fraction of its bits, the
        AUC bound's as a fraction of the target's room above chance (0.5); <= 0 when every one is
        met.
        """
        def over(figure: float, target: float, floor: float = 0.0) -> float:
            return (figure - target) / max(target - floor, 1e-12)
        gaps = [over(declared_bits(row["holdout_leakage_bits"]), self.leakage_bits)] if self.leakage_bits is not None else []
        gaps += [over(declared_bits(row["holdout_leakage_bits_by_column"][c]), bits) for c, bits in self.columns.items()]
        if self.auc is not None:
            gaps.append(over(row["holdout_attacker_auc_high"], self.auc, 0.5))
        return max(gaps, default=0.0)

    def fails_regardless(self, est: HoldoutLeakage) -> str | None:
        """Why an estimate before its costly attackers misses the targets whatever they say, or None.

        ``est`` carries the Bayes attacker's bound alone (:class:`~privmap.offline.mechanisms.table.PendingAttackers`):
        the full bound is the largest of three, so a Bayes bound above the AUC target fails it, as
        does a leakage above its target.
        """
        by_column = est.column_bits()
        if (self.leakage_bits is not None and declared_bits(est.leakage_bits) > self.leakage_bits
                or any(declared_bits(by_column[c]) > bits for c, bits in self.columns.items())):
            return "leakage"
        if self.auc is not None and est.attacker_auc_high is not None and est.attacker_auc_high > self.auc:
            return "bayes"
        return None

    def met_by(self, est: HoldoutLeakage) -> bool:
        by_column = est.column_bits()
        return bool((self.leakage_bits is None or declared_bits(est.leakage_bits) <= self.leakage_bits)
                    and (self.auc is None or (est.attacker_auc_high is not None and est.attacker_auc_high <= self.auc))
                    and all(declared_bits(by_column[c]) <= bits for c, bits in self.columns.items()))


#: Why a candidate's costly attackers were not run (its row's ``unattacked``), by what decided it.
UNATTACKED = {
    "leakage": "fails the target on its leakage, whatever the attackers",
    "bayes": "fails the target on the Bayes attacker's bound, whatever the others",
    "beaten": "cannot be chosen: a candidate of less held-out distortion meets the target",
    "no-auc": "the target sets no AUC: only the chosen candidate's attackers are run",
}


class _Run:
    """The search's candidates judged in batches that share one progress count.

    Each candidate is built on all the rows first when its folds start from that build
    (:func:`privmap.offline.mechanisms.table._reuse.starts_folds`), then cross-fitted, every
    (candidate, fold) a task of :func:`privmap.offline.mechanisms.table._holdout.cross_fitted_many`
    that draws the fold's releases and scores the Bayes attacker on them, nearly free. The costly
    attackers (gradient boosting, logistic regression: :data:`privmap.offline._strongest.COSTLY`)
    run on those releases later (:meth:`attack`), and only where the search needs a figure they
    can change: a row's ``meets_target`` is None until then when the target has an AUC and neither
    the leakage nor the Bayes attacker's bound already fails it (:meth:`_Targets.fails_regardless`).
    Each attacker is a function of the fold's releases and the seed, so a candidate attacked late
    has the figures it would have had at once.

    **The same choice as judging every candidate fully.** The search reads a row's status where
    judging every candidate fully would, and each read runs the attackers it needs
    (:meth:`meets`), with one exception: a row *beaten* by one known to meet the target (its
    :func:`_key` no better, the search's order settling equal keys, :meth:`place`) cannot be
    chosen, so where its status only decides whether its pair goes on to a smaller fraction
    (:func:`_search_budgets`) it goes on as if it met (:meth:`goes_on`), and the rows so added rest
    on it (:meth:`rests_on`): such a row counts only once every row it rests on is known to meet
    (:meth:`best` runs their attackers before choosing it), and is dropped where one fails (the
    plain search never tries it). Going on costs the smaller fraction's folds where the beaten row
    would have failed on the costly attackers alone; running them costs their attackers wherever it
    met, the usual case, and then the plain search judges the smaller fraction too. A fraction 0's
    status, and a bisection step's, are always read: what they decide (the larger fractions of a
    pair that failed at 0, the next midpoint) costs more to explore than the attackers.

    What is saved is the attackers of the rows whose status is never read: a budget's last
    step (the grid's smallest fraction, the last bisection), the beaten rows, and with a target of
    leakage alone every row but the chosen. A row never attacked says so (``attacked``: the Bayes
    attacker alone, its figures as ``holdout_attacker_auc_bayes`` and ``..._high_bayes``;
    ``unattacked``: why, :data:`UNATTACKED`) and carries no strongest attacker's figures; its
    ``meets_target`` is None where it was not decided. A row added on a beaten row whose status was
    never needed says ``tried_as_if_met``: the larger fraction it rests on.
    """

    def __init__(self, dataset: Dataset, options: QuantizedOptions, targets: _Targets, *, jobs, progress, tasks: int):
        self.dataset, self.options, self.targets = dataset, options, targets
        self.jobs, self.progress, self.tasks, self.done = jobs, progress, tasks, 0
        self.pending = 0              # tasks of the codebooks still to search (:func:`choose`)
        self.quantizations: dict = {}  # every fold's k-means so far, for the next batches (cross_fitted_many)
        self.unattacked: dict = {}    # id(row) -> (row, triple, codebook, PendingAttackers): costly attackers to run
        self.attacked: dict = {}      # id(row) -> the full estimate of a row attacked late
        self.positions: dict = {}     # id(row) -> (plan, judged so far): the row's place in plan order
        self.under: dict = {}         # id(row) -> the beaten rows it rests on (:meth:`rests_on`)
        self.plan = 0                 # the plan judged (:meth:`place`)
        self.bar: dict | None = None  # the least row known to meet the target and to count (:meth:`raise_bar`)

    def tell(self, done: int, triple, class_blind: bool | None = None) -> None:
        if self.progress:
            blind = self.options.class_blind if class_blind is None else class_blind
            k, smoothing, fraction = triple
            self.progress(min(done, self.tasks), self.tasks, candidate_label(k, smoothing, fraction, blind))

    def place(self, plan: int) -> None:
        """The rows judged next belong to ``plan`` (its index in plan order, :func:`_judge_plans`)."""
        self.plan = plan

    def judge(self, triples: list, under: Sequence[tuple] | None = None) -> list[tuple[dict, Any, Any]]:
        """One ``(row, estimate or BuildError, build or None)`` per ``(K, smoothing, fraction)``.

        The estimate is a :class:`~privmap.offline.mechanisms.table.PendingAttackers` where the
        costly attackers are still to run (:meth:`estimate` gives the full one). ``under``: for
        each triple, the beaten rows it rests on (:meth:`rests_on`; default none).
        """
        candidates = _candidates(self.options, triples)
        builds: list = []
        for c, triple in zip(candidates, triples):
            self.tell(self.done, triple)
            builds.append(_candidate_build(self.dataset, c) if starts_folds(c) else None)
            if builds[-1] is not None:
                self.done += 1
        starts = [BuildStart.of(b, self.options.metric) if isinstance(b, Solved) else None for b in builds]
        before, folds = self.done, self.options.folds
        self.tell(before, triples[0])
        outcomes = cross_fitted_many(InMemoryRows(self.dataset), candidates, attacker="bayes", jobs=self.jobs,
                                     builds=starts, quantizations=self.quantizations,
                                     progress=lambda done, total: self.tell(
                                         before + done, triples[min(done // folds, len(triples) - 1)]))
        self.done = before + len(candidates) * self.options.folds
        judged = []
        for n, (t, b, outcome) in enumerate(zip(triples, builds, outcomes)):
            failed = b if isinstance(b, BuildError) else outcome if isinstance(outcome, BuildError) else None
            row = self.row(t, failed) if failed is not None else self.row(t, outcome.estimate, pending=True)
            self.positions[id(row)] = (self.plan, len(self.positions))
            self.under[id(row)] = tuple(under[n]) if under else ()
            if failed is None:
                self.unattacked[id(row)] = (row, t, self.options.class_blind, outcome)
                self.raise_bar(row)
            judged.append((row, failed or outcome, b))
        if self.bar is not None:      # a row meets: the nearest by shortfall is never needed, nor a failed row's attackers
            for key in [key for key, (row, *_) in self.unattacked.items() if row["meets_target"] is False]:
                del self.unattacked[key]
        return judged

    def row(self, triple, est, *, pending: bool = False) -> dict:
        """A candidate's row from its estimate or BuildError (``pending``: before its costly attackers)."""
        k, s, f = triple
        row: dict[str, Any] = {"clusters": k, "smoothing": s, **({} if f is None else {"delta_fraction": f})}
        if isinstance(est, BuildError):
            row["error"] = str(est)
            return row
        row.update(holdout_leakage_bits=est.leakage_bits, holdout_leakage_high_bits=est.high_bits,
                   holdout_distortion=est.distortion)
        failed = self.targets.fails_regardless(est) if pending else None
        if pending:
            row.update(attacked="bayes", holdout_attacker_auc_bayes=est.attacker_auc,
                       holdout_attacker_auc_high_bayes=est.attacker_auc_high)
            if failed is not None:
                row["unattacked"] = UNATTACKED[failed]
        else:
            row.update(holdout_attacker_auc=est.attacker_auc, holdout_attacker_auc_high=est.attacker_auc_high,
                       holdout_attacker=est.attacker)
        by_column = est.column_bits()
        if by_column:
            row["holdout_leakage_bits_by_column"] = by_column
        if not pending or self.targets.auc is None:    # the attackers decide nothing without an AUC target
            row["meets_target"] = self.targets.met_by(est) if failed is None else False
        else:
            row["meets_target"] = False if failed is not None else None
        return row

    def attack(self, rows: list) -> None:
        """Run the costly attackers of those of ``rows`` still without them, and complete their rows.

        Each row is updated in place to the row of its full estimate (its other keys, such as
        ``class_blind``, kept); progress counts the tasks as the search's own (the total grows by them).
        """
        todo = [self.unattacked.pop(id(r)) for r in rows if id(r) in self.unattacked]
        if not todo:
            return
        before, folds = self.done, self.options.folds
        self.tasks += len(todo) * folds

        def told(done: int, total: int) -> None:
            _, triple, blind, _ = todo[min(done // folds, len(todo) - 1)]
            self.tell(before + done, triple, blind)
        full = attack_pending([p for *_, p in todo], jobs=self.jobs, progress=told)
        self.done = before + len(todo) * folds
        for (row, triple, _, _), est in zip(todo, full):
            for key in ("attacked", "unattacked", "holdout_attacker_auc_bayes", "holdout_attacker_auc_high_bayes"):
                row.pop(key, None)
            row.update(self.row(triple, est))
            self.attacked[id(row)] = est
            self.raise_bar(row)

    def meets(self, row: dict) -> bool:
        """Whether a candidate's row meets the target, its costly attackers run first if that needs them."""
        if row["meets_target"] is None:
            self.attack([row])
        return bool(row["meets_target"])

    def counts(self, row: dict) -> bool | None:
        """Whether the plain search tries ``row``: every beaten row it rests on met (None: not all known)."""
        statuses = [r["meets_target"] for r in self.under[id(row)]]
        return False if False in statuses else None if None in statuses else True

    def raise_bar(self, row: dict) -> None:
        """Take ``row`` as the least known to meet the target, where it meets, counts and is less."""
        if row.get("meets_target") and self.counts(row) and (self.bar is None or self.order(row) < self.order(self.bar)):
            self.bar = row

    def order(self, row: dict) -> tuple:
        """A row's place in the choice: :func:`_key`, then its place in plan order."""
        return (*_key(row), self.positions[id(row)])

    def goes_on(self, row: dict) -> bool:
        """Whether ``row``'s pair goes on to its next smaller fraction (:func:`_search_budgets`).

        It does where the row meets the target, and where it is beaten (class docstring) with its
        status unknown: then the rows added rest on it (:meth:`rests_on`) and its attackers wait.
        """
        if "error" in row:
            return False
        if row["meets_target"] is None and self.bar is not None and self.order(self.bar) < self.order(row):
            return True
        return self.meets(row)

    def rests_on(self, row: dict) -> tuple:
        """The beaten rows a row added after ``row`` rests on: ``row``'s own, and ``row`` if its status is unknown."""
        return self.under[id(row)] + ((row,) if row["meets_target"] is None else ())

    def best(self, rows: list) -> dict | None:
        """The row :func:`_best` chooses among ``rows`` (no failed builds) where one meets; None where none does.

        The rows are read in the choice's order (:meth:`order`), each one's costly attackers run
        only if its status needs them, and for a row that meets, those of the beaten rows it rests
        on: the first that meets and counts is the one chosen, and no later row can be, so their
        attackers are not run. A row that meets but does not count is passed over (the plain search
        never tries it).
        """
        for row in sorted(rows, key=self.order):
            if self.counts(row) is False or not self.meets(row):
                continue
            for below in self.under[id(row)]:
                self.meets(below)
            if self.counts(row):
                self.raise_bar(row)
                return row
        return None

    def finish(self, judged: list, chosen: dict) -> list:
        """``judged`` without the rows the plain search never tries, the chosen row attacked.

        Every row still without its costly attackers is told why, and a row resting on a beaten row
        of unknown status says which fraction that was (``tried_as_if_met``).
        """
        self.attack([chosen])
        kept = [entry for entry in judged if "error" in entry[0] or self.counts(entry[0]) is not False]
        for row, _, _ in kept:
            if "error" in row:
                continue
            if id(row) in self.unattacked:
                row.setdefault("unattacked", UNATTACKED["beaten" if self.targets.auc is not None else "no-auc"])
            unknown = [r for r in self.under[id(row)] if r["meets_target"] is None]
            if unknown:
                row["tried_as_if_met"] = unknown[-1].get("delta_fraction")
        return kept

    def estimate(self, row: dict, outcome):
        """A judged row's estimate: the full one where its attackers ran late, else its ``outcome``.

        A row never attacked gives the estimate of its Bayes attacker alone.
        """
        if isinstance(outcome, PendingAttackers):
            return self.attacked.get(id(row), outcome.estimate)
        return outcome


def candidate_label(clusters: int, smoothing: float, fraction: float | None, class_blind: bool) -> str:
    """A candidate in words, as the search's progress names it.

    Its K, smoothing, budget (as a fraction of the perfect-privacy distortion, when searched) and
    codebook.
    """
    return (f"K {clusters}, smoothing {smoothing:g}" + ("" if fraction is None else f", Delta/D0 {fraction:g}")
            + f", {_codebook_name(class_blind)}")


def _codebook_name(class_blind: bool) -> str:
    return "class-blind" if class_blind else "k-means"


def _candidates(options: QuantizedOptions, triples) -> list:
    """The options of each ``(K, smoothing, fraction)`` (fraction None: the build's own budget)."""
    return [dataclasses.replace(options, clusters=k, smoothing=s, auto=None) if f is None else
            dataclasses.replace(options, clusters=k, smoothing=s, auto=None, delta=None, delta_fraction=f)
            for k, s, f in triples]


def _tasks(candidate, folds: int) -> int:
    return folds + int(starts_folds(candidate))


def _best(rows: list, targets: _Targets) -> dict:
    """The row the search chooses: the least distortion meeting the target, else the nearest.

    The least held-out distortion among the rows that meet the target (ties: smaller K, less
    smoothing, then the larger fraction), or when none does the nearest the target
    (:meth:`_Targets.shortfall`; ties: less leakage, then as above).
    """
    meeting = [r for r in rows if r["meets_target"]]
    if meeting:
        return min(meeting, key=_key)
    return min(rows, key=lambda r: (targets.shortfall(r), r["holdout_leakage_bits"], r["holdout_distortion"],
                                    r["clusters"], r["smoothing"], -r.get("delta_fraction", 0.0)))


def _key(row: dict) -> tuple:
    """A row's order among those meeting the target: held-out distortion, K, smoothing, the larger fraction first."""
    return row["holdout_distortion"], row["clusters"], row["smoothing"], -row.get("delta_fraction", 0.0)


def _search_budgets(run: _Run, pairs: list, fractions: list) -> list:
    """Every (K, smoothing) of ``pairs`` judged at the grid's ``fractions``, the largest first.

    From the largest (the most private) down, a pair's next smaller fraction is tried only while the
    larger one met the target: the leakage and the attacker's AUC rise as the budget falls, so below
    a fraction that failed no fraction would meet it, and a fine alphabet's folds at small budgets,
    the search's dearest tasks, are spared. A fraction 0 in the grid (a class-blind codebook's) is
    tried first instead, and a pair that meets the target there is done: no budget distorts less.
    One batch of candidates per fraction. A row's status is read only where a smaller fraction is
    left to decide on (:meth:`_Run.goes_on`: a beaten row goes on as if it met), so the smallest
    fraction's rows keep their costly attackers for :meth:`_Run.best`.
    """
    judged: list = []
    order = sorted(fractions, reverse=True)
    active = list(pairs)
    if order[-1] == 0.0 and len(order) > 1:
        judged += run.judge([(k, s, 0.0) for k, s in active])
        done = {(row["clusters"], row["smoothing"]) for row, _, _ in judged if "error" not in row and run.meets(row)}
        active, order = [p for p in active if p not in done], order[:-1]
    under: list = [()] * len(active)
    for step, fraction in enumerate(order):
        if not active:
            break
        batch = run.judge([(k, s, fraction) for k, s in active], under)
        judged += batch
        later = len(order) - step - 1
        # read in the choice's order, so that the first row that meets makes the rest beaten
        on = {id(row): later > 0 and run.goes_on(row)
              for row in sorted((r for r, _, _ in batch if "error" not in r), key=run.order)}
        going = [row for row, _, _ in batch if on.get(id(row))]
        active, under = [(row["clusters"], row["smoothing"]) for row in going], [run.rests_on(row) for row in going]
        run.tasks = run.done + later * sum(_tasks(c, run.options.folds) for c in _candidates(
            run.options, [(k, s, fraction) for k, s in active])) + REFINE_STEPS * (run.options.folds + 1) + run.pending
    return judged


def _refine_budget(run: _Run, judged: list) -> list:
    """Bisect the budget of the grid's best (K, smoothing) :data:`REFINE_STEPS` times.

    The bisection runs between its fraction and the next smaller one tried (half its fraction below
    the grid): the grid's steps are coarse, and the least budget that still meets the target keeps
    the most utility. Nothing when no candidate meets the target. The last step's status decides
    nothing, so it is not read (its costly attackers wait for :meth:`_Run.best`).
    """
    rows = [row for row, _, _ in judged if "error" not in row and run.counts(row) is not False]
    best = run.best(rows)
    if best is None:
        return []
    k, s, hi = best["clusters"], best["smoothing"], best["delta_fraction"]
    if hi == 0.0:
        return []
    below = [r["delta_fraction"] for r in rows if r["clusters"] == k and r["smoothing"] == s
             and r["delta_fraction"] < hi]
    lo = max(below) if below else hi / 2.0
    added: list = []
    for step in range(REFINE_STEPS):
        middle = round((lo + hi) / 2.0, 4)
        added += run.judge([(k, s, middle)])
        row = added[-1][0]
        if step == REFINE_STEPS - 1:
            break
        if "error" not in row and run.meets(row):
            hi = middle
        else:
            lo = middle
    return added


def _column_targets(dataset: Dataset, options: QuantizedOptions) -> dict | None:
    """The per-column leakage targets of ``options.auto`` as ``{column: bits}``.

    Empty without any; checked against the dataset's private columns; None when the dataset has
    one private column (:func:`_single_column_target` reads them then).

    Raises
    ------
    BuildError
        A target naming a column that is not one of the private columns.
    """
    targets = dict(options.auto.column_targets) if options.auto is not None else {}
    columns = dataset.columns
    if columns is None:
        return None
    unknown = [c for c in targets if c not in columns.names]
    if unknown:
        raise BuildError(f"--target-leakage {unknown[0]}=...: {unknown[0]!r} is not a private column "
                         f"(private columns: {', '.join(columns.names)})")
    return targets


def _single_column_target(dataset: Dataset, options: QuantizedOptions, joint: float | None) -> float | None:
    """The joint's leakage target when there is one private column.

    A target named for that column is the joint's (the attribute is that column); the tighter one
    where both are given.

    Raises
    ------
    BuildError
        A target naming another column than the private one.
    """
    targets = dict(options.auto.column_targets) if options.auto is not None else {}
    for column, bits in targets.items():
        if column != dataset.private_name:
            raise BuildError(f"--target-leakage {column}=...: {column!r} is not the private column "
                             f"({dataset.private_name!r})")
        joint = bits if joint is None else min(joint, bits)
    return joint


def _candidate_build(dataset: Dataset, options) -> Solved | BuildError:
    """A candidate's build on all the rows, or the BuildError that stopped it.

    The build is :func:`privmap.offline.mechanisms.table._program.solve_rows`; a candidate whose
    build failed is marked failed, as one whose fold failed.
    """
    try:
        return solve_rows(InMemoryRows(dataset), options)
    except BuildError as exc:
        return exc


def format_candidates(choice: Choice) -> str:
    """The candidates as a human-readable table, the chosen one marked with ``*``, the target below it.

    A candidate whose costly attackers were not run (:class:`_Run`) shows the Bayes attacker's AUC
    and bound, ``bayes...`` as its attacker, and why.
    """
    searched = choice.delta_fraction is not None
    codebooks = any("class_blind" in r for r in choice.candidates)
    lines = [f"{'':2}{'K':>5} {'smoothing':>9}" + (f" {'Delta/D0':>8}" if searched else "")
             + (f" {'codebook':>11}" if codebooks else "")
             + f" {'holdout leak bits':>17} {'(upper)':>9} {'holdout dist':>12} {'holdout AUC':>11} {'(upper)':>7}"]
    for r in choice.candidates:
        mark = "*" if r["chosen"] else " "
        head = f"{mark:2}{r['clusters']:>5} {r['smoothing']:>9.3g}" + (
            f" {r['delta_fraction']:>8.3g}" if searched else "") + (
            f" {_codebook_name(r['class_blind']):>11}" if codebooks else "")
        if "error" in r:
            lines.append(f"{head}  failed: {r['error']}")
            continue
        bayes = "attacked" in r                  # the Bayes attacker alone: its figures, and why
        auc, high = (r["holdout_attacker_auc_bayes"], r["holdout_attacker_auc_high_bayes"]) if bayes else (
            r["holdout_attacker_auc"], r["holdout_attacker_auc_high"])
        lines.append(f"{head} {r['holdout_leakage_bits']:>17.5f} "
                     f"{r['holdout_leakage_high_bits']:>9.5f} {r['holdout_distortion']:>12.4f} "
                     f"{auc:>11.4f} {high:>7.4f} "
                     f"{'bayes...' if bayes else r.get('holdout_attacker') or '-':>8}"
                     + "".join(f"  {c} {b:.5f}" for c, b in r.get("holdout_leakage_bits_by_column", {}).items())
                     + ("" if r["meets_target"] else "  above target" if r["meets_target"] is False else "")
                     + (f"  (Bayes alone: {r['unattacked']})" if bayes else ""))
    lines[0] += f" {'attacker':>8}"              # the strongest attacker, after the AUC and its bound
    goal = []
    if choice.target_leakage_bits is not None:
        goal.append(f"held-out leakage <= {choice.target_leakage_bits:.5f} bits"
                    + (f" (default: {DEFAULT_TARGET_FRACTION:g} x H(A))" if choice.target_source == "default" else ""))
    for column, bits in choice.column_targets.items():
        goal.append(f"held-out leakage of {column} <= {bits:.5f} bits")
    if choice.target_auc is not None:
        goal.append(f"held-out AUC of the strongest attacker (Bayes, boosting, logistic) <= {choice.target_auc:.4f} "
                    "(its 95 % upper bound; 'bayes...': the Bayes attacker's alone, the others not run)")
    met = any(r.get("meets_target") for r in choice.candidates)
    lines.append("target: " + " and ".join(goal) + ("; least held-out distortion among those meeting it"
                                                   if met else "; no candidate meets it: the nearest chosen"))
    return "\n".join(lines)

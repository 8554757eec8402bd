"""The Keras feature matrix: the features users combine, which combinations exist, which are
refused, and the cases that run (tests/tf/jobs/keras_matrix_job.py runs them; docs/tensorflow.md
shows them, written by dev/keras-matrix-doc). Imports neither TensorFlow nor mpirep.

A case is a dict over DIMENSIONS; the Keras flavour (keras3, tf_keras, or keras2 under
TensorFlow < 2.16) is the job's, not the case's. A new dimension is one line in DIMENSIONS (its
first value is what cases without it mean) and its effect in the job; "jit" compiles fit's
step and the tape's with XLA.
"""

import itertools

DIMENSIONS = {
    "dtype": ("float32", "mixed_float16", "mixed_bfloat16"),
    "training": ("DistributedOptimizer", "ZeroRedundancyOptimizer", "DistributedGradientTape"),
    "accumulation": ("none", "gradient_accumulation_steps", "backward_passes_per_step"),
    "broadcast": (False, True),
    "metric_average": (False, True),
    "warmup": (False, True),
    "backup": (False, True),
    "jit": (False, True),
}
# The rank counts of dev/test's jobs, a dimension of the covering array: each of its cases runs
# at one of them (the full product at every one).
RANKS = (2, 3)
FIT_CALLBACKS = ("metric_average", "warmup", "backup")
# Keras flavours without Keras 3's gradient_accumulation_steps.
WITHOUT_KERAS_ACCUMULATION = ("tf_keras", "keras2")
# Flavours whose TensorFlow (before 2.16) lacks the XLA FFI that mpirep's XLA kernels need: there
# the callbacks turn jit_compile off (docs/tensorflow.md, "XLA and GPU nodes"), which is the
# non-jit case again.
WITHOUT_XLA_KERNELS = ("keras2",)


def not_a_combination(case, flavour):
    """Why ``case`` is not something a user can write (None when it is)."""
    if case["training"] == "DistributedGradientTape":
        if any(case[name] for name in FIT_CALLBACKS):
            return "a custom loop has no fit callbacks (broadcast: broadcast_variables)"
        if case["accumulation"] == "backward_passes_per_step":
            return "DistributedGradientTape has no backward_passes_per_step"
    if case["accumulation"] == "gradient_accumulation_steps" and \
            flavour in WITHOUT_KERAS_ACCUMULATION:
        return "refused: see REFUSALS"
    if case["jit"] and flavour in WITHOUT_XLA_KERNELS:
        return "no XLA kernels on this TensorFlow: the same as without jit"
    if case["jit"] and case["training"] == "ZeroRedundancyOptimizer":
        return "refused: see REFUSALS"
    return None


# Combinations that cannot be supported, each checked by the job: (name, flavours it applies
# to, the case, where it raises, the exception, a fragment of its message).
REFUSALS = [
    ("tf_keras optimizers have no gradient_accumulation_steps", WITHOUT_KERAS_ACCUMULATION,
     dict(accumulation="gradient_accumulation_steps"), "the optimizer's constructor (Keras)",
     "TypeError", "gradient_accumulation_steps"),
    ("Keras's gradient_accumulation_steps with backward_passes_per_step", ("keras3",),
     dict(accumulation="both"), "DistributedOptimizer / ZeroRedundancyOptimizer", "ValueError",
     "accumulates gradients already"),
    ("BackupAndRestore backing up between accumulated micro-steps", ("keras3", "tf_keras",
                                                                     "keras2"),
     dict(accumulation="backward_passes_per_step", backup=True, save_freq=3),
     "the start of fit", "ValueError", "is not a multiple of 2"),
    ("ZeroRedundancyOptimizer in an XLA-compiled step", ("keras3", "tf_keras"),
     dict(training="ZeroRedundancyOptimizer", jit=True), "the first step, traced for XLA",
     "XlaCollectiveError", "reducescatter cannot be compiled by XLA"),
]


def full_product(flavour):
    """Every combination a user can write, in a fixed order."""
    names = list(DIMENSIONS)
    cases = [dict(zip(names, values)) for values in itertools.product(*DIMENSIONS.values())]
    return [c for c in cases if not_a_combination(c, flavour) is None]


def pairwise(flavour):
    """A covering array of strength 2 over DIMENSIONS and the rank count (RANKS): every pair
    of values of two of them that some combination holds is in some case. Greedy (the case that
    covers most pairs not yet covered, the first of equals), so the same list every time. Each
    case has its "ranks"."""
    cases = [dict(case, ranks=ranks) for case in full_product(flavour) for ranks in RANKS]
    names = list(DIMENSIONS) + ["ranks"]

    def pairs(case):
        return {((a, case[a]), (b, case[b])) for a, b in itertools.combinations(names, 2)}

    uncovered = set().union(*(pairs(c) for c in cases))
    chosen = []
    while uncovered:
        best = max(cases, key=lambda c: len(pairs(c) & uncovered))
        chosen.append(best)
        uncovered -= pairs(best)
    return chosen


def cases(flavour, mode, ranks):
    """The cases of a job at ``ranks`` ranks: ``mode`` "pairwise" (dev/test: those of the
    covering array at this rank count, or all of them at a count outside RANKS) or "full"
    (every combination)."""
    if mode == "full":
        return full_product(flavour)
    chosen = pairwise(flavour)
    return [c for c in chosen if c["ranks"] == ranks] if ranks in RANKS else chosen


def refusals(flavour):
    return [r for r in REFUSALS if flavour in r[1]]


def label(case):
    """A short name, as the job reports a failing case."""
    on = [name for name in DIMENSIONS if DIMENSIONS[name][0] is False and case[name]]
    return "/".join([case["dtype"], case["training"], case["accumulation"]] + on)

"""The Keras feature matrix (tests/tf/keras_matrix.py), one mpirun job per rank count and Keras
flavour, looping over its cases in-process: pairwise coverage by default, every combination
with MPIREP_TEST_KERAS_MATRIX=full (docs/tensorflow.md, "The Keras feature matrix")."""

import itertools
import os
import subprocess
import sys

import pytest

import keras_matrix
from keras_versions import keras_cases, keras_env
from mpijob import REPO, assert_passed, build_op_library, mpirun

MODE = os.environ.get("MPIREP_TEST_KERAS_MATRIX", "pairwise")
TIMEOUT_S = 3600 if MODE == "full" else 400


@pytest.mark.parametrize("flavour", ["keras3", "tf_keras", "keras2"])
def test_pairwise_cases_cover_every_pair_of_values(flavour):
    def pairs(case):
        return {((a, case[a]), (b, case[b]))
                for a, b in itertools.combinations([*keras_matrix.DIMENSIONS, "ranks"], 2)}

    full = [dict(case, ranks=ranks) for case in keras_matrix.full_product(flavour)
            for ranks in keras_matrix.RANKS]
    chosen = keras_matrix.pairwise(flavour)
    assert set().union(*map(pairs, chosen)) == set().union(*map(pairs, full))
    assert all(case in full for case in chosen) and len(chosen) < len(full) / 20
    assert all(keras_matrix.not_a_combination(case, flavour) is None for case in chosen)


def test_the_doc_shows_the_current_matrix():
    done = subprocess.run([sys.executable, str(REPO / "dev" / "keras-matrix-doc"), "--check"],
                          cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("ranks,keras", keras_cases([(2, "keras3"), (3, "keras3"),
                                                     (2, "tf_keras"), (3, "tf_keras")]))
def test_keras_feature_matrix(ranks, keras):
    pytest.importorskip("tensorflow")
    build_op_library()
    job = mpirun(ranks, [REPO / "tests" / "tf" / "jobs" / "keras_matrix_job.py", MODE],
                 TIMEOUT_S, env=keras_env(keras))
    assert_passed(job, ranks)

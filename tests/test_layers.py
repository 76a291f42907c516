"""The lower layers import nothing from the layers above them (docs/ARCHITECTURE.md).

Today's check covers the maths, data and models layers; issue 13's full layering (runs,
tasks, entry points, no function-level imports) will extend it.
"""

import subprocess
import sys
import textwrap

LOWER = ["abc_tf.geometry", "abc_tf.losses", "abc_tf.schedules", "abc_tf.augment", "abc_tf.data.sets",
         "abc_tf.data.shapes3d", "abc_tf.data.mnist", "abc_tf.data.folders", "abc_tf.data.faces_cars",
         "abc_tf.data.pose", "abc_tf.data.render.pose", "models"]
UPPER = ("abc_tf.evaluation", "abc_tf.training", "abc_tf.export", "abc_tf.callbacks", "abc_tf.run_summary")


def test_maths_data_and_models_do_not_import_evaluation_runs_or_export():
    # A fresh process: this test process has imported everything already.
    script = textwrap.dedent(f"""
        import importlib, sys
        for name in {LOWER!r}:
            importlib.import_module(name)
        print(sorted(name for name in sys.modules if name.startswith({UPPER!r})))
    """)
    completed = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip().splitlines()[-1] == "[]"

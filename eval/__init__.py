"""The evaluation code: scorers, fitting scripts (eval/fit/) and build comparisons; the data sets they
read stay in testdata/eval/. Run the members from the repository root as modules, for example
`python3 -m eval.fit.cv_gates --help`; hook_eval.py and score.py also run as plain scripts."""
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "testdata", "eval")
HOOK_EVAL = os.path.join(ROOT, "eval", "hook_eval.py")

#!/usr/bin/env bash
# The overlay venv in which benchmarks/pixels_vs_torch.py runs LeRobot's SAC as a peer.
#
#     bash benchmarks/lerobot_peer_venv.sh [VERSION [VENV]]
#         VERSION 0.6.1 (default; VENV /tmp/lerobot061_venv) or 0.4.4 (/tmp/lerobot044_venv)
#
# On top of the project's .venv (its Python 3.11 and its torch 2.13.0+cpu, seen through a .pth
# file; the project's .venv is not changed). Everything is installed with --no-deps, so pip never
# resolves torch: lerobot itself (which pins torch < 2.12 or < 2.11: the project's torch 2.13.0
# is used instead) and only the packages that importing its SAC needs:
#
# - draccus and its pure-Python dependencies, einops, termcolor;
# - torchvision 0.28.0 (torch 2.13's): lerobot.configs imports it. PyPI's wheel is linked against
#   CUDA torch, so its C ops do not load against the CPU torch; the peer worker skips
#   torchvision's fake-kernel registrations for those ops (SAC calls none of them);
# - PyAV 15 (lerobot pins < 16; the project's 18 lacks av.option): lerobot.policies imports
#   every policy, and one of them the dataset code;
# - 0.4.4 only: accelerate, diffusers and deepdiff, imported on the same path.
#
# lerobot 0.6.1 declares Python >= 3.12 (--ignore-requires-python) and uses 3.12's
# type-parameter syntax in five modules, all imported on the way to its SAC: the installed copies
# get a syntax-only backport (type parameters become module-level TypeVars, `type X = Y` becomes
# `X = Y`), so it imports on 3.11. No other change to lerobot.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
VERSION="${1:-0.6.1}"
VENV="${2:-/tmp/lerobot$(echo "${VERSION//./}" | cut -c1-3)_venv}"
BASE_PY="$ROOT/.venv/bin/python"
BASE_SITE="$("$BASE_PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"

COMMON=(mergedeep==1.3.4 toml==0.10.2 typing-inspect==0.9.0 mypy-extensions==1.2.0
    einops==0.8.2 termcolor==3.3.0 torchvision==0.28.0 av==15.1.0)
case "$VERSION" in
0.6.1) PACKAGES=(lerobot==0.6.1 draccus==0.11.6 "${COMMON[@]}") ;;
0.4.4) PACKAGES=(lerobot==0.4.4 draccus==0.10.0 "${COMMON[@]}" accelerate==1.10.1
    diffusers==0.35.2 deepdiff==8.6.1 orderly-set==5.5.0) ;;
*) echo "unknown version $VERSION (0.6.1 or 0.4.4)" >&2; exit 2 ;;
esac

"$BASE_PY" -m venv "$VENV"
SITE="$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
echo "import site; site.addsitedir('$BASE_SITE')" >"$SITE/zz_robot_rl_venv.pth"
"$VENV/bin/pip" install --quiet --no-deps --ignore-requires-python "${PACKAGES[@]}"

"$VENV/bin/python" - "$SITE/lerobot" <<'EOF'
"""Rewrite Python 3.12 type-parameter syntax in the installed lerobot for Python 3.11."""
import pathlib
import re
import sys

TYPE_ALIAS = re.compile(r"^type (\w+) = ")
GENERIC = re.compile(r"^(class|def) (\w+)\[([^\]]*)\](.*)$")


def backport(text: str) -> str:
    out: list[str] = []
    for line in text.split("\n"):
        line = TYPE_ALIAS.sub(r"\1 = ", line)
        m = GENERIC.match(line)
        if m:
            kind, name, params, rest = m.groups()
            tvars = [p.split(":")[0].strip() for p in params.split(",") if p.strip()]
            generic = f'__import__("typing").Generic[{", ".join(tvars)}]'
            if kind == "def":
                line = f"def {name}{rest}"
            elif rest.startswith("("):
                bases, tail = rest[1:].split(")", 1)
                line = f"class {name}({bases}, {generic}){tail}"
            else:
                line = f"class {name}({generic}){rest}"
            at = len(out)  # above the decorators, if any
            while at and out[at - 1].startswith("@"):
                at -= 1
            out[at:at] = [f'{t} = __import__("typing").TypeVar("{t}")' for t in tvars]
        out.append(line)
    return "\n".join(out)


changed = []
for path in sorted(pathlib.Path(sys.argv[1]).rglob("*.py")):
    text = path.read_text()
    new = backport(text)
    if new != text:
        compile(new, str(path), "exec")
        path.write_text(new)
        changed.append(str(path))
print("backported:", *(changed or ["nothing"]), sep="\n  ")
EOF

"$VENV/bin/python" -c "
import sys, types
sys.modules['torchvision._meta_registrations'] = types.ModuleType('torchvision._meta_registrations')
import importlib, torch, lerobot
sac = 'lerobot.policies.sac.modeling_sac' if lerobot.__version__.startswith('0.4') else 'lerobot.rl.algorithms.sac'
importlib.import_module(sac)
print('lerobot', lerobot.__version__, '(' + sac + ') with torch', torch.__version__, 'in', sys.prefix)
"

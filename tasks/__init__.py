"""One file per task, shared by the real robot and the twin. Imported as ``robot_rl.tasks``.

Every module here registers its task class with ``robot_rl.envs.task.register_task``; importing
this package imports them all, so ``make_task(name)`` finds every task without a list to edit.
"""

import importlib
import pkgutil

for _module in pkgutil.iter_modules(__path__):
    if not _module.name.startswith("_"):
        importlib.import_module(f"{__name__}.{_module.name}")

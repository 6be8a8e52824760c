"""One file per task, shared by the real robot and the twin. Imported as ``robot_rl.tasks``."""

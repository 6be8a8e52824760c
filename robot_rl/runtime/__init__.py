"""The run-time loops: single-process training, the actor and the learner, evaluation, recipes,
observation mode and the stack supervisor (the actor-learner transport is robot_rl.transport)."""

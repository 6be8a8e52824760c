"""The topics on which a simulated cell's parts (its cameras, its simulated operator) read its
world: ground truth that evaluation and the operator read and an actor never does."""

FR3_STATE_TOPIC, CAR_STATE_TOPIC = "/sim/cell/state", "/sim/car/state"
"""Float64MultiArray: [wall stamp, qpos...] of a cell's world, for its cameras."""
CUBE_TOPIC, SUCCESS_TOPIC = "/sim/objects/cube/pose", "/sim/success"
RESET_OBJECTS = "/sim/reset_objects"
"""The FR3 cell's ground truth (PoseStamped, Bool) and its service that places the cube anew."""
COLLISION_TOPIC = "/sim/collision"
"""The car cell's wall contact (Bool)."""

"""Actor <-> learner transport on ZeroMQ: typed msgpack messages, acknowledged and durable."""

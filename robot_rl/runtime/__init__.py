"""Actor loop, learner loop and the actor-learner transport (later issues)."""

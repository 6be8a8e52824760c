"""The component container's service types, by name only: launch_ros imports them, robot_rl
never loads composable nodes, and building a request fails with a message saying why."""


class _Refused:
    service = ""

    def __init__(self, *args, **kwargs):
        raise RuntimeError(
            f"composition_interfaces/{self.service} is a test stand-in (tests/stand_ins): "
            "composable nodes need a ROS 2 installation's real composition_interfaces"
        )


def _service(name: str) -> type:
    request = type("Request", (_Refused,), {"service": f"{name}.Request"})
    response = type("Response", (_Refused,), {"service": f"{name}.Response"})
    return type(name, (), {"Request": request, "Response": response})


LoadNode = _service("LoadNode")
UnloadNode = _service("UnloadNode")
ListNodes = _service("ListNodes")

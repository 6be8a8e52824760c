"""Who may connect: loopback by default; anything else only with ZeroMQ CURVE keys.

``robot-rl keys DIR`` writes a learner key pair and an actor key pair (ZeroMQ's certificate
files: ``NAME.key`` public, ``NAME.key_secret`` secret). The learner loads its secret key and
accepts only actors whose public key lies in its authorised-keys directory; an actor loads its
own secret key and the learner's public key. Traffic is then encrypted and authenticated.
"""

from __future__ import annotations

import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import zmq
import zmq.auth


class SecurityError(ValueError):
    """A configuration that would expose the learner or the actor without authentication."""


def endpoint_host(endpoint: str) -> str:
    if endpoint.startswith(("ipc://", "inproc://")):
        return "local"
    if not endpoint.startswith("tcp://"):
        raise SecurityError(f"endpoint {endpoint!r}: use tcp://HOST:PORT (or ipc://PATH)")
    parts = urlsplit(endpoint)
    if parts.port is None:
        raise SecurityError(f"endpoint {endpoint!r} has no port")
    return parts.hostname or ""


def is_loopback(endpoint: str) -> bool:
    host = endpoint_host(endpoint)
    if host in ("local", "localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a host name or an interface name ('*', 'eth0'): not provably local


def generate_keys(directory: str | os.PathLike) -> dict[str, Path]:
    """A learner and an actor key pair in ``directory`` (existing files are not overwritten)."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    written = {}
    for name in ("learner", "actor"):
        public = directory / f"{name}.key"
        if public.exists() or (directory / f"{name}.key_secret").exists():
            raise SecurityError(f"{public} already exists; choose another directory")
        public_file, secret_file = zmq.auth.create_certificates(directory, name)
        os.chmod(secret_file, 0o600)
        written[name] = Path(public_file)
        written[f"{name}_secret"] = Path(secret_file)
    authorised = directory / "authorized_actors"
    authorised.mkdir(exist_ok=True)
    (authorised / "actor.key").write_bytes(written["actor"].read_bytes())
    written["authorized_actors"] = authorised
    return written


def _load(path: str | os.PathLike, need_secret: bool) -> tuple[bytes, bytes | None]:
    path = Path(path)
    if not path.is_file():
        raise SecurityError(f"key file {path} does not exist (make keys with `robot-rl keys DIR`)")
    try:
        public, secret = zmq.auth.load_certificate(path)
    except (ValueError, OSError) as err:
        raise SecurityError(f"{path} is not a ZeroMQ certificate file: {err}") from err
    if need_secret and not secret:
        raise SecurityError(f"{path} holds no secret key (pass the .key_secret file)")
    return public, secret


@dataclass(frozen=True)
class ServerKeys:
    secret_key_file: str
    """The learner's ``.key_secret`` file."""
    authorized_dir: str
    """A directory of actors' public ``.key`` files; only these may connect."""

    def apply(self, socket: zmq.Socket, context: zmq.Context):
        """Make ``socket`` a CURVE server; returns the running authenticator (stop it later)."""
        from zmq.auth.thread import ThreadAuthenticator

        public, secret = _load(self.secret_key_file, need_secret=True)
        if not Path(self.authorized_dir).is_dir():
            raise SecurityError(f"authorised-keys directory {self.authorized_dir} does not exist")
        authenticator = ThreadAuthenticator(context)
        authenticator.start()
        authenticator.configure_curve(domain="*", location=str(self.authorized_dir))
        socket.curve_secretkey = secret
        socket.curve_publickey = public
        socket.curve_server = True
        return authenticator


@dataclass(frozen=True)
class ClientKeys:
    secret_key_file: str
    """The actor's ``.key_secret`` file."""
    server_public_key_file: str
    """The learner's public ``.key`` file."""

    def apply(self, socket: zmq.Socket) -> None:
        public, secret = _load(self.secret_key_file, need_secret=True)
        server_public, _ = _load(self.server_public_key_file, need_secret=False)
        socket.curve_secretkey = secret
        socket.curve_publickey = public
        socket.curve_serverkey = server_public


def check_bind(endpoint: str, keys: ServerKeys | None) -> None:
    if keys is None and not is_loopback(endpoint):
        raise SecurityError(
            f"refusing to bind {endpoint} without authentication: only loopback endpoints may "
            "run without keys. Make keys with `robot-rl keys DIR` and pass --curve-secret-key "
            "DIR/learner.key_secret --authorized-keys DIR/authorized_actors"
        )

"""Small-world measures and the connectome model (``python -m graphs.smallworld``; the attention graphs are in
``python -m receptive.smallworld``, which adds them through :class:`graphs.smallworld.cli.ModelFamily`)."""

from .connectome import FITTED, FLYWIRE, ConnectomeFit, calibrate_connectome, connectome_model, reciprocity
from .measures import SmallWorld, er_clustering, er_path_length, lattice_clustering, small_world

__all__ = [
    "FITTED",
    "FLYWIRE",
    "ConnectomeFit",
    "SmallWorld",
    "calibrate_connectome",
    "connectome_model",
    "er_clustering",
    "er_path_length",
    "lattice_clustering",
    "reciprocity",
    "small_world",
]

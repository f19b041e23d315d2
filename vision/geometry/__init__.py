"""The shared geometry backbone (VGGT-shaped): aggregator, camera / DPT heads, camera maths, losses.

Knows nothing of tasks. Start from :func:`create_backbone` and read :mod:`vision.geometry.model` for the forward
contract.
"""

from vision.geometry.aggregator import Aggregator
from vision.geometry.camera import (cameras_to_pose_encoding, depth_to_world_points, matrix_to_quat,
                                    pose_encoding_to_cameras, project_points, quat_to_matrix)
from vision.geometry.heads import CameraHead, DPTHead
from vision.geometry.losses import camera_loss, depth_loss, normalize_scene, point_loss
from vision.geometry.model import BACKBONE_CONFIGS, GeometryBackbone, create_backbone
from vision.geometry.weights import load_backbone

__all__ = ["Aggregator", "CameraHead", "DPTHead", "GeometryBackbone", "BACKBONE_CONFIGS", "create_backbone",
           "load_backbone", "camera_loss", "depth_loss", "point_loss", "normalize_scene",
           "cameras_to_pose_encoding", "pose_encoding_to_cameras", "depth_to_world_points", "project_points",
           "quat_to_matrix", "matrix_to_quat"]

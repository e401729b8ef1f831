"""Broken quietly: mp_ok_student.py's scaler built with loss scale 1024 and growth after 4 good steps
whatever cfg.loss_scale and cfg.growth_interval say (their defaults)."""
import gradlab
from mp_ok_student import Scaler


@gradlab.register("mixed_precision")
def build(cfg):
    scaler = Scaler(cfg)
    scaler.loss_scale, scaler.interval = 1024.0, 4                 # BUG: cfg.loss_scale, cfg.growth_interval
    return scaler

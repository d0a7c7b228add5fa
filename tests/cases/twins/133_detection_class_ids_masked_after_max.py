"""Twin of 133_detection_class_ids_masked_after_max.py, written out of place by hand: the suppressed boxes' class ids are chosen with torch.where, so torch.max's saved indices stay as they were."""
import torch
from torch import nn


def detect(cls_probs, keep_threshold=0.3):
    out = []
    for i in range(cls_probs.shape[0]):
        cls_prob = cls_probs[i]
        conf, class_id = torch.max(cls_prob[1:], 0)
        non_keep = conf < keep_threshold
        class_id = torch.where(non_keep, torch.full_like(class_id, -1), class_id)
        out.append(torch.stack((class_id.float(), conf), dim=1))
    return torch.stack(out)


def run() -> None:
    torch.manual_seed(0)
    head = nn.Linear(8, 3 * 5)
    features = torch.randn(2, 8)
    cls_probs = torch.softmax(head(features).view(2, 3, 5), dim=1)
    detections = detect(cls_probs)
    detections[..., 1].sum().backward()


def grads() -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    head = nn.Linear(8, 3 * 5)
    features = torch.randn(2, 8)
    cls_probs = torch.softmax(head(features).view(2, 3, 5), dim=1)
    detections = detect(cls_probs)
    detections[..., 1].sum().backward()
    return {name: p.grad for name, p in head.named_parameters()}

"""Detection post-processing: the class ids torch.max returns are set to -1 for suppressed boxes in place, and a loss on the kept scores is backpropagated."""
# outcome: inplace-error
# far-apart
import torch
from torch import nn


def detect(cls_probs, keep_threshold=0.3):
    out = []
    for i in range(cls_probs.shape[0]):
        cls_prob = cls_probs[i]
        conf, class_id = torch.max(cls_prob[1:], 0)  # saved-by
        non_keep = conf < keep_threshold
        class_id[non_keep] = -1  # error: IPL001
        out.append(torch.stack((class_id.float(), conf), dim=1))
    return torch.stack(out)


def run() -> None:
    torch.manual_seed(0)
    head = nn.Linear(8, 3 * 5)
    features = torch.randn(2, 8)
    cls_probs = torch.softmax(head(features).view(2, 3, 5), dim=1)
    detections = detect(cls_probs)
    detections[..., 1].sum().backward()

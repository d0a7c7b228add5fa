"""Twin of 097_style_transfer_clamp_leaf.py, written out of place by hand: Neural style transfer optimizing the image itself, clamping it to [0, 1] in place outside torch.no_grad()."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def gram_matrix(feat):
    b, c, h, w = feat.size()
    f = feat.view(b * c, h * w)
    return f @ f.t() / (b * c * h * w)


def run_style_transfer(features, content_img, style_img, steps=2):
    input_img = content_img.clone().requires_grad_(True)
    optimizer = torch.optim.Adam([input_img], lr=0.05)
    target_content = features(content_img).detach()
    target_gram = gram_matrix(features(style_img)).detach()
    for _ in range(steps):
        input_img.data.clamp_(0, 1)
        optimizer.zero_grad()
        feat = features(input_img)
        loss = F.mse_loss(feat, target_content) + 1e3 * F.mse_loss(gram_matrix(feat), target_gram)
        loss.backward()
        optimizer.step()
    return input_img.detach()


def run() -> None:
    torch.manual_seed(0)
    features = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(), nn.Conv2d(4, 4, 3, padding=1))
    for p in features.parameters():
        p.requires_grad_(False)
    run_style_transfer(features, torch.rand(1, 3, 6, 6), torch.rand(1, 3, 6, 6))


def grads() -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    features = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(), nn.Conv2d(4, 4, 3, padding=1))
    for p in features.parameters():
        p.requires_grad_(False)
    image = run_style_transfer(features, torch.rand(1, 3, 6, 6), torch.rand(1, 3, 6, 6))
    return {"image": image}

"""Modern Computer Vision with PyTorch, ch. 11 neural style transfer: after LBFGS optimizes the image `opt_img` (a leaf that requires grad), the notebook shows it with `postprocess(opt_img[0])`, whose first transform is `T.Lambda(lambda x: x.mul_(1./255))`, in place on a view of the leaf."""
# outcome: leaf-error
# source: https://github.com/PacktPublishing/Modern-Computer-Vision-with-PyTorch/issues/36
# repo: PacktPublishing/Modern-Computer-Vision-with-PyTorch
# category: leaf
# twin: 1021_mcvp_style_transfer_postprocess_mul__fixed.py
import numpy as np
import torch
import torch.nn as nn
from torch import optim
from torch.nn import functional as F


# ---- stand-ins for torch_snippets / torchvision (not installed here): transforms, vgg19 features (random weights, no download), Report, show ----
class T:
    class Compose:
        def __init__(self, transforms):
            self.transforms = transforms

        def __call__(self, img):
            for t in self.transforms:
                img = t(img)
            return img

    class Lambda:
        def __init__(self, lambd):
            self.lambd = lambd

        def __call__(self, img):
            return self.lambd(img)

    class Normalize:
        def __init__(self, mean, std, inplace=False):
            self.mean, self.std, self.inplace = mean, std, inplace

        def __call__(self, tensor):
            if not self.inplace:
                tensor = tensor.clone()
            mean = torch.as_tensor(self.mean, dtype=tensor.dtype).view(-1, 1, 1)
            std = torch.as_tensor(self.std, dtype=tensor.dtype).view(-1, 1, 1)
            return tensor.sub_(mean).div_(std)

    @staticmethod
    def ToTensor():
        return lambda img: img


class _VGG19:
    def __init__(self):
        cfg = [64, 64, 'M', 128, 128, 'M', 256, 256, 256, 256, 'M', 512, 512, 512, 512, 'M', 512, 512, 512, 512, 'M']
        layers = []
        in_channels = 3
        for v in cfg:
            if v == 'M':
                layers += [nn.MaxPool2d(kernel_size=2, stride=2)]
            else:
                layers += [nn.Conv2d(in_channels, v, kernel_size=3, padding=1), nn.ReLU(inplace=True)]
                in_channels = v
        self.features = nn.Sequential(*layers)


def vgg19(pretrained=False):
    return _VGG19()


class Report:
    def __init__(self, n_epochs):
        self.n_epochs = n_epochs
        self.records = []

    def record(self, pos, end='\n', **kwargs):
        self.records.append((pos, {k: float(v) for k, v in kwargs.items()}))

    def plot(self, log=False):
        print(self.records[-1])


def show(img):
    print(tuple(img.shape))


device = 'cuda' if torch.cuda.is_available() else 'cpu'

preprocess = T.Compose([
    T.ToTensor(),
    T.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225]),
    T.Lambda(lambda x: x.mul_(255))
])
postprocess = T.Compose([
    T.Lambda(lambda x: x.mul_(1./255)),  # error: IPL002
    T.Normalize(mean=[-0.485/0.229, -0.456/0.224, -0.406/0.225], std=[1/0.229, 1/0.224, 1/0.225]),
])


class GramMatrix(nn.Module):
    def forward(self, input):
        b,c,h,w = input.size()
        feat = input.view(b, c, h*w)
        G = feat@feat.transpose(1,2)
        G.div_(h*w)
        return G
class GramMSELoss(nn.Module):
    def forward(self, input, target):
        out = F.mse_loss(GramMatrix()(input), target)
        return(out)
class vgg19_modified(nn.Module):
    def __init__(self):
        super().__init__()
        features = list(vgg19(pretrained = True).features)
        self.features = nn.ModuleList(features).eval()
    def forward(self, x, layers=[]):
        order = np.argsort(layers)
        _results, results = [], []
        for ix,model in enumerate(self.features):
            x = model(x)
            if ix in layers: _results.append(x)
        for o in order: results.append(_results[o])
        return results if layers is not [] else x


vgg = vgg19_modified().to(device)

# random 32x32 images instead of the downloaded style / content images
imgs = [torch.rand(3, 32, 32) for path in ['style_image.png', '60.jpg']]
style_image, content_image = [preprocess(img).to(device)[None] for img in imgs]

opt_img = content_image.data.clone()
opt_img.requires_grad = True

style_layers = [0, 5, 10, 19, 28]
content_layers = [21]
loss_layers = style_layers + content_layers

loss_fns = [GramMSELoss()] * len(style_layers) + [nn.MSELoss()] * len(content_layers)
loss_fns = [loss_fn.to(device) for loss_fn in loss_fns]

style_weights = [1000/n**2 for n in [64,128,256,512,512]]
content_weights = [1]
weights = style_weights + content_weights

style_targets = [GramMatrix()(A).detach() for A in vgg(style_image, style_layers)]
content_targets = [A.detach() for A in vgg(content_image, content_layers)]
targets = style_targets + content_targets

max_iters = 3
optimizer = optim.LBFGS([opt_img], max_iter=3)
log = Report(max_iters)

iters = 0
while iters < max_iters:
    def closure():
        global iters
        iters += 1
        optimizer.zero_grad()
        out = vgg(opt_img, loss_layers)
        layer_losses = [weights[a] * loss_fns[a](A, targets[a]) for a,A in enumerate(out)]
        loss = sum(layer_losses)
        loss.backward()
        log.record(pos=iters, loss=loss, end='\r')
        return loss
    optimizer.step(closure)

log.plot(log=True)

out_img = postprocess(opt_img[0]).permute(1,2,0)
show(out_img)

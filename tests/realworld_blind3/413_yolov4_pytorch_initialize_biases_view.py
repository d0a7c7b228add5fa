"""YOLOv4-PyTorch's YOLO.__init__ runs _initialize_biases, which adds the objectness and class priors to a view of each Detect conv bias, `b = mi.bias.view(m.na, -1); b[:, 4] += math.log(8 / (640 / s) ** 2)`, outside torch.no_grad(): the model cannot even be built."""
# outcome: leaf-error
# source: https://github.com/Lornatang/YOLOv4-PyTorch/issues/6
# repo: Lornatang/YOLOv4-PyTorch
# category: leaf
# twin: 414_yolov4_pytorch_initialize_biases_view_fixed.py
# yolov4_pytorch/model/module/layer.py (Detect, YOLO, parse_model) with the modules the
# yolov3-tiny config uses (conv.py, neck.py, pooling.py, common.py) and the helpers layer.py
# imports; the config is configs/COCO-Detection/yolov3-tiny.yaml as a dict with the width
# multiple shrunk; train.py's `model = YOLO(config_file=..., number_classes=...)` and one SGD
# step on a random batch.
import math
from copy import deepcopy
from pathlib import Path

import torch
import torch.nn as nn
from torch.cuda import amp


# ---- yolov4_pytorch/utils/common.py, weights.py, device.py; model/common.py ----
def make_divisible(x, divisor):
    # Returns x evenly divisble by divisor
    return math.ceil(x / divisor) * divisor


def initialize_weights(model):
    for m in model.modules():
        t = type(m)
        if t is nn.Conv2d:
            pass
        elif t is nn.BatchNorm2d:
            m.eps = 1e-3
            m.momentum = 0.03
        elif t in [nn.LeakyReLU, nn.ReLU, nn.ReLU6]:
            m.inplace = True


def time_synchronized():
    import time
    return time.time()


def model_info(model, verbose=False):
    n_p = sum(x.numel() for x in model.parameters())  # number parameters
    n_g = sum(x.numel() for x in model.parameters() if x.requires_grad)  # number gradients
    print('Model Summary: %g layers, %g parameters, %g gradients' % (len(list(model.parameters())), n_p, n_g))


def scale_image(img, ratio=1.0, same_shape=False):
    return img


def fuse_conv_and_bn(conv, bn):
    raise NotImplementedError


# ---- yolov4_pytorch/model/module/conv.py ----
def autopad(k, p=None):  # kernel, padding
    # Pad to 'same'
    if p is None:
        p = k // 2 if isinstance(k, int) else [x // 2 for x in k]  # auto-pad
    return p


class Conv(nn.Module):
    # Standard convolution
    def __init__(self, c1, c2, k=1, s=1, p=None, g=1, act=True):  # ch_in, ch_out, kernel, stride, padding, groups
        super(Conv, self).__init__()
        self.conv = nn.Conv2d(c1, c2, k, s, autopad(k, p), groups=g, bias=False)
        self.bn = nn.BatchNorm2d(c2)
        self.act = nn.LeakyReLU(0.1, inplace=True) if act else nn.Identity()

    def forward(self, x):
        return self.act(self.bn(self.conv(x)))

    def fuseforward(self, x):
        return self.act(self.conv(x))


C3 = ConvBNMish = CrossConv = DWConv = MixConv2d = MobileNetConv = Focus = SPP = None
BottleneckCSP = YOLOv4_Bottleneck = YOLOv4_BottleneckCSP = None


# ---- yolov4_pytorch/model/module/neck.py ----
class Bottleneck(nn.Module):
    # Standard bottleneck
    def __init__(self, c1, c2, shortcut=True, g=1, e=0.5):  # ch_in, ch_out, shortcut, groups, expansion
        super(Bottleneck, self).__init__()
        c_ = int(c2 * e)  # hidden channels
        self.cv1 = Conv(c1, c_, 1, 1)
        self.cv2 = Conv(c_, c2, 3, 1, g=g)
        self.add = shortcut and c1 == c2

    def forward(self, x):
        return x + self.cv2(self.cv1(x)) if self.add else self.cv2(self.cv1(x))


# ---- yolov4_pytorch/model/module/pooling.py ----
class Maxpool(nn.Module):
    # Standard max pool
    def __init__(self, kernel_size, stride=None, padding=0):
        super(Maxpool, self).__init__()
        self.maxpool = nn.MaxPool2d(kernel_size, stride=stride, padding=padding)

    def forward(self, x):
        return self.maxpool(x)


# ---- yolov4_pytorch/model/module/common.py ----
class Concat(nn.Module):
    # Concatenate a list of tensors along dimension
    def __init__(self, dimension=1):
        super(Concat, self).__init__()
        self.d = dimension

    def forward(self, x):
        return torch.cat(x, self.d)


def check_anchor_order(m):
    # Check anchor order against stride order for YOLOv5 Detect() module m, and correct if necessary
    a = m.anchor_grid.prod(-1).view(-1)  # anchor area
    da = a[-1] - a[0]  # delta a
    ds = m.stride[-1] - m.stride[0]  # delta s
    if da.sign() != ds.sign():  # same order
        print('Reversing anchor order')
        m.anchors[:] = m.anchors.flip(0)
        m.anchor_grid[:] = m.anchor_grid.flip(0)


# ---- yolov4_pytorch/model/module/layer.py ----
class Detect(nn.Module):
    def __init__(self, nc=80, anchors=(), ch=()):  # detection layer
        super(Detect, self).__init__()
        self.stride = None  # strides computed during build
        self.nc = nc  # number of classes
        self.no = nc + 5  # number of outputs per anchor
        self.nl = len(anchors)  # number of detection layers
        self.na = len(anchors[0]) // 2  # number of anchors
        self.grid = [torch.zeros(1)] * self.nl  # init grid
        a = torch.tensor(anchors).float().view(self.nl, -1, 2)
        self.register_buffer('anchors', a)  # shape(nl,na,2)
        self.register_buffer('anchor_grid', a.clone().view(self.nl, 1, -1, 1, 1, 2))  # shape(nl,1,na,1,1,2)
        self.m = nn.ModuleList(nn.Conv2d(x, self.no * self.na, 1) for x in ch)  # output conv
        self.export = False  # onnx export

    def forward(self, x):
        # x = x.copy()  # for profiling
        z = []  # inference output
        self.training |= self.export
        for i in range(self.nl):
            x[i] = self.m[i](x[i])  # conv
            bs, _, ny, nx = x[i].shape  # x(bs,255,20,20) to x(bs,3,20,20,85)
            x[i] = x[i].view(bs, self.na, self.no, ny, nx).permute(0, 1, 3, 4, 2).contiguous()

            if not self.training:  # inference
                if self.grid[i].shape[2:4] != x[i].shape[2:4]:
                    self.grid[i] = self._make_grid(nx, ny).to(x[i].device)

                y = x[i].sigmoid()
                y[..., 0:2] = (y[..., 0:2] * 2. - 0.5 + self.grid[i].to(x[i].device)) * self.stride[i]  # xy
                y[..., 2:4] = (y[..., 2:4] * 2) ** 2 * self.anchor_grid[i]  # wh
                z.append(y.view(bs, -1, self.no))

        return x if self.training else (torch.cat(z, 1), x)

    @staticmethod
    def _make_grid(nx=20, ny=20):
        yv, xv = torch.meshgrid([torch.arange(ny), torch.arange(nx)])
        return torch.stack((xv, yv), 2).view((1, 1, ny, nx, 2)).float()


class YOLO(nn.Module):
    def __init__(self, config_file='configs/yolov5-small.yaml', channels=3, number_classes=None):
        super(YOLO, self).__init__()
        if isinstance(config_file, dict):
            self.yaml = config_file  # model dict
        else:  # is *.yaml
            import yaml  # for torch hub
            self.yaml_file = Path(config_file).name
            with open(config_file) as f:
                self.yaml = yaml.load(f, Loader=yaml.FullLoader)  # model dict

        # Define model
        if number_classes and number_classes != self.yaml['number_classes']:
            print('Overriding %s nc=%g with nc=%g' % (config_file, self.yaml['number_classes'], number_classes))
            self.yaml['number_classes'] = number_classes  # override yaml value
        self.model, self.save = parse_model(deepcopy(self.yaml), ch=[channels])  # model, savelist, ch_out
        # print([x.shape for x in self.forward(torch.zeros(1, ch, 64, 64))])

        # Build strides, anchors
        m = self.model[-1]  # Detect()
        if isinstance(m, Detect):
            s = 128  # 2x min stride
            m.stride = torch.tensor([s / x.shape[-2] for x in self.forward(torch.zeros(1, channels, s, s))])  # forward
            m.anchors /= m.stride.view(-1, 1, 1)
            check_anchor_order(m)
            self.stride = m.stride
            self._initialize_biases()  # only run once

        # Init weights, biases
        initialize_weights(self)
        self.info()
        print('')

    @amp.autocast()
    def forward(self, x, augment=False, profile=False):
        if augment:
            image_size = x.shape[-2:]  # height, width
            s = [1, 0.83, 0.67]  # scales
            f = [None, 3, None]  # flips (2-ud, 3-lr)
            y = []  # outputs
            for si, fi in zip(s, f):
                xi = scale_image(x.flip(fi) if fi else x, si)
                yi = self.forward_once(xi)[0]  # forward
                yi[..., :4] /= si  # de-scale
                if fi == 2:
                    yi[..., 1] = image_size[0] - yi[..., 1]  # de-flip ud
                elif fi == 3:
                    yi[..., 0] = image_size[1] - yi[..., 0]  # de-flip lr
                y.append(yi)
            return torch.cat(y, 1), None  # augmented inference, train
        else:
            return self.forward_once(x, profile)  # single-scale inference, train

    @amp.autocast()
    def forward_once(self, x, profile=False):
        y, dt = [], []  # outputs
        for m in self.model:
            if m.f != -1:  # if not from previous layer
                x = y[m.f] if isinstance(m.f, int) else [x if j == -1 else y[j] for j in m.f]  # from earlier layers

            if profile:
                try:
                    import thop
                    o = thop.profile(m, inputs=(x,), verbose=False)[0] / 1E9 * 2  # FLOPS
                except:
                    o = 0
                t = time_synchronized()
                for _ in range(10):
                    _ = m(x)
                dt.append((time_synchronized() - t) * 100)
                print('%10.1f%10.0f%10.1fms %-40s' % (o, m.np, dt[-1], m.type))

            x = m(x)  # run
            y.append(x if m.i in self.save else None)  # save output

        if profile:
            print('%.1fms total' % sum(dt))
        return x

    def _initialize_biases(self, cf=None):  # initialize biases into Detect(), cf is class frequency
        # cf = torch.bincount(torch.tensor(np.concatenate(dataset.labels, 0)[:, 0]).long(), minlength=nc) + 1.
        m = self.model[-1]  # Detect() module
        for mi, s in zip(m.m, m.stride):  #  from
            b = mi.bias.view(m.na, -1)  # conv.bias(255) to (3,85)
            b[:, 4] += math.log(8 / (640 / s) ** 2)  # obj (8 objects per 640 image)  # error: IPL002
            b[:, 5:] += math.log(0.6 / (m.nc - 0.99)) if cf is None else torch.log(cf / cf.sum())  # cls  # error: IPL002
            mi.bias = torch.nn.Parameter(b.view(-1), requires_grad=True)

    def _print_biases(self):
        m = self.model[-1]  # Detect() module
        for mi in m.m:  #  from
            b = mi.bias.detach().view(m.na, -1).T  # conv.bias(255) to (3,85)
            print(('%6g Conv2d.bias:' + '%10.3g' * 6) % (mi.weight.shape[1], *b[:5].mean(1).tolist(), b[5:].mean()))

    # def _print_weights(self):
    #     for m in self.model.modules():
    #         if type(m) is Bottleneck:
    #             print('%10.3g' % (m.w.detach().sigmoid() * 2))  # shortcut weights

    def fuse(self):  # fuse model Conv2d() + BatchNorm2d() layers
        print('Fusing layers... ', end='')
        for m in self.model.modules():
            if type(m) is Conv:
                m.conv = fuse_conv_and_bn(m.conv, m.bn)  # update conv
                m.bn = None  # remove batchnorm
                m.forward = m.fuseforward  # update forward
        self.info()
        return self

    def info(self):  # print model information
        model_info(self)


def parse_model(d, ch):  # model_dict, input_channels(3)
    print('\n%3s%18s%3s%10s  %-40s%-30s' % ('', 'from', 'n', 'params', 'module', 'arguments'))
    anchors, number_classes, gd, gw = d['anchors'], d['number_classes'], d['depth_multiple'], d['width_multiple']
    na = (len(anchors[0]) // 2) if isinstance(anchors, list) else anchors  # number of anchors
    no = na * (number_classes + 5)  # number of outputs = anchors * (classes + 5)

    layers, save, c2 = [], [], ch[-1]  # layers, savelist, ch out
    for i, (f, n, m, args) in enumerate(d['backbone'] + d['head']):  # from, number, module, args
        m = eval(m) if isinstance(m, str) else m  # eval strings
        for j, a in enumerate(args):
            try:
                args[j] = eval(a) if isinstance(a, str) else a  # eval strings
            except:
                pass

        n = max(round(n * gd), 1) if n > 1 else n  # depth gain
        if m in [nn.Conv2d, Conv, Bottleneck, SPP, DWConv, MixConv2d, MobileNetConv, Focus, CrossConv, BottleneckCSP,
                 C3, YOLOv4_Bottleneck, YOLOv4_BottleneckCSP, ConvBNMish]:
            c1, c2 = ch[f], args[0]

            c2 = make_divisible(c2 * gw, 8) if c2 != no else c2

            args = [c1, c2, *args[1:]]
            if m in [BottleneckCSP, C3]:
                args.insert(2, n)
                n = 1
        elif m is nn.BatchNorm2d:
            args = [ch[f]]
        elif m is Concat:
            c2 = sum([ch[-1 if x == -1 else x + 1] for x in f])
        elif m is Detect:
            args.append([ch[x + 1] for x in f])
            if isinstance(args[1], int):  # number of anchors
                args[1] = [list(range(args[1] * 2))] * len(f)
        elif m is Maxpool:
            kernel_size, strides = args[0], args[1]
            args = [kernel_size, strides]
        else:
            c2 = ch[f]

        m_ = nn.Sequential(*[m(*args) for _ in range(n)]) if n > 1 else m(*args)  # module
        t = str(m)[8:-2].replace('__main__.', '')  # module type
        np = sum([x.numel() for x in m_.parameters()])  # number params
        m_.i, m_.f, m_.type, m_.np = i, f, t, np  # attach index, 'from' index, type, number params
        print('%3s%18s%3s%10.0f  %-40s%-30s' % (i, f, n, np, t, args))  # print
        save.extend(x % i for x in ([f] if isinstance(f, int) else f) if x != -1)  # append to savelist
        layers.append(m_)
        ch.append(c2)
    return nn.Sequential(*layers), sorted(save)

# ---- configs/COCO-Detection/yolov3-tiny.yaml (width multiple 1/8) ----
YOLOV3_TINY = {
    'number_classes': 80,
    'depth_multiple': 1.0,
    'width_multiple': 0.125,
    'anchors': [[10, 14, 23, 27, 37, 58], [81, 82, 135, 169, 344, 319]],
    'backbone': [[-1, 1, 'Conv', [16, 3, 1]],
                 [-1, 1, 'Maxpool', [2, 2]],
                 [-1, 1, 'Conv', [32, 3, 1]],
                 [-1, 1, 'Maxpool', [2, 2]],
                 [-1, 1, 'Conv', [64, 3, 1]],
                 [-1, 1, 'Maxpool', [2, 2]],
                 [-1, 1, 'Conv', [128, 3, 1]],
                 [-1, 1, 'Maxpool', [2, 2]],
                 [-1, 1, 'Conv', [256, 3, 1]],
                 [-1, 1, 'Maxpool', [2, 2]],
                 [-1, 1, 'Conv', [512, 3, 1]],
                 [-1, 1, 'Conv', [1024, 3, 1]]],
    'head': [[-1, 1, 'Bottleneck', [512, False]],
             [-1, 1, 'Conv', [128, 1, 1]],
             [-1, 1, 'nn.Upsample', [None, 2, 'nearest']],
             [[-1, 8], 1, 'Concat', [1]],
             [-1, 1, 'Conv', [256, 1, 1]],
             [[16, 12], 1, 'Detect', ['number_classes', 'anchors']]],
}


# ---- train.py (the lines the traceback goes through), then one step ----
if __name__ == '__main__':
    device = torch.device('cpu')
    config_file = YOLOV3_TINY
    number_classes = 3
    model = YOLO(config_file=config_file, number_classes=number_classes).to(device)

    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.937, nesterov=True)
    model.train()
    images = torch.rand(2, 3, 64, 64)
    pred = model(images)
    loss = sum(p.sigmoid().mean() for p in pred)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print([p.shape for p in pred], loss.item())

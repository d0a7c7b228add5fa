"""PSENet (VinAIResearch/PSENet-Image-Enhancement framework.py): training_step builds the n-th batch's pseudo ground truth from `self.model(im)[0].clone().detach()` (the current model's output fed back as a reference), stores `self.saved_input` / `self.saved_pseudo_gt` on the module, and trains on the (n-1)-th batch saved by the previous step; UnetTMO uses inplace LeakyReLU/relu6."""
# outcome: ok
# source: https://github.com/VinAIResearch/PSENet-Image-Enhancement/blob/main/source/framework.py
# repo: VinAIResearch/PSENet-Image-Enhancement
# category: iteration
import torch
import torch.nn as nn
import torch.nn.functional as F
import pytorch_lightning as pl
from pytorch_lightning import LightningModule


# ---- model.py ----


class Hswish(nn.Module):
    def __init__(self, inplace=True):
        super(Hswish, self).__init__()
        self.inplace = inplace

    def forward(self, x):
        return x * F.relu6(x + 3.0, inplace=self.inplace) / 6.0


class Hsigmoid(nn.Module):
    def __init__(self, inplace=True):
        super(Hsigmoid, self).__init__()
        self.inplace = inplace

    def forward(self, x):
        return F.relu6(3 * x + 3.0, inplace=self.inplace) / 6.0


class HTanh(nn.Module):
    def __init__(self, inplace=True):
        super(HTanh, self).__init__()
        self.inplace = inplace

    def forward(self, x):
        return F.relu6(x, inplace=self.inplace) / 3.0 - 1.0


class NegHsigmoid(nn.Module):
    def __init__(self, inplace=True):
        super(NegHsigmoid, self).__init__()
        self.inplace = inplace

    def forward(self, x):
        return F.relu6(3 * x + 3.0, inplace=self.inplace) / 6.0 - 0.5


class SEModule(nn.Module):
    def __init__(self, channel, reduction=1):
        super(SEModule, self).__init__()
        self.avg_pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Sequential(
            nn.Conv2d(channel, channel // reduction, 1, 1, 0, bias=True),
            nn.ReLU(inplace=True),
            nn.Conv2d(channel // reduction, channel, 1, 1, 0, bias=True),
        )

    def forward(self, x):
        y = self.avg_pool(x)
        y = self.fc(y)
        return x * y


class Identity(nn.Module):
    def __init__(self, channel):
        super(Identity, self).__init__()

    def forward(self, x):
        return x


class MobileBottleneck(nn.Module):
    def __init__(self, inp, oup, kernel, stride, exp, se="SE", nl="RE"):
        super(MobileBottleneck, self).__init__()
        assert stride in [1, 2]
        # assert kernel in [3, 5, 7]
        padding = (kernel - 1) // 2
        self.use_res_connect = stride == 1 and inp == oup
        # self.use_res_connect = False
        conv_layer = nn.Conv2d
        if nl == "RE":
            nlin_layer = nn.ReLU  # or ReLU6
        elif nl == "HS":
            nlin_layer = Hswish
        elif nl == "LeRE":
            nlin_layer = nn.LeakyReLU
        elif nl == "HSig":
            nlin_layer = Hsigmoid
        elif nl == "NegHSig":
            nlin_layer = NegHsigmoid
        else:
            raise NotImplementedError
        if se == "SE":
            SELayer = SEModule
        else:
            SELayer = Identity
        if exp != oup:
            self.conv = nn.Sequential(
                # pw
                conv_layer(inp, exp, 1, 1, 0, bias=True, padding_mode="reflect"),
                nlin_layer(inplace=True),
                # dw
                conv_layer(
                    exp, exp, kernel, stride=stride, padding=padding, groups=exp, bias=True, padding_mode="reflect"
                ),
                SELayer(exp),
                nlin_layer(inplace=True),
                # pw-linear
                conv_layer(exp, oup, 1, 1, 0, bias=True, padding_mode="reflect"),
            )
        else:
            self.conv = nn.Sequential(
                # pw
                conv_layer(inp, exp, 1, 1, 0, bias=True),
                nlin_layer(inplace=False),
                conv_layer(exp, oup, 1, 1, 0, bias=True),
            )

    def forward(self, x):
        if self.use_res_connect:
            return x + self.conv(x)
        else:
            return self.conv(x)


class UnetTMO(nn.Module):
    def __init__(
        self,
    ):
        super().__init__()
        self.first_conv = MobileBottleneck(3, 3, 3, 1, 6, nl="LeRE")
        base_number = 16
        self.conv1 = MobileBottleneck(3, base_number, 3, 2, int(base_number * 1.5), False, "LeRE")
        self.conv2 = MobileBottleneck(base_number, base_number, 3, 1, int(base_number * 1.5), False, "LeRE")
        self.conv3 = MobileBottleneck(base_number, base_number * 2, 3, 2, base_number * 3, False, "LeRE")
        self.conv5 = MobileBottleneck(base_number * 2, base_number * 2, 3, 1, base_number * 3, False, "LeRE")
        self.conv6 = MobileBottleneck(base_number * 2, base_number, 3, 1, base_number * 3, False, "LeRE")
        self.conv7 = MobileBottleneck(base_number * 2, base_number, 3, 1, base_number * 3, False, "LeRE")
        self.conv8 = MobileBottleneck(base_number, 3, 3, 1, int(base_number * 1.5), False, "LeRE")
        self.last_conv = MobileBottleneck(6, 3, 3, 1, 9, nl="LeRE")

    def forward(self, x):
        x_down = x
        x_1 = self.first_conv(x)
        r = self.conv1(x_1)
        r = self.conv2(r)
        r_d2 = r
        r = self.conv3(r)
        r = self.conv5(r)
        r = self.conv6(r)
        r = F.interpolate(r, (r_d2.shape[2], r_d2.shape[3]), mode="bilinear", align_corners=True)
        r = self.conv7(torch.cat([r_d2, r], dim=1))
        r = self.conv8(r)
        r = F.interpolate(r, (x_down.shape[2], x_down.shape[3]), mode="bilinear", align_corners=True)
        r = self.last_conv(torch.cat([x_1, r], dim=1))
        r = torch.abs(r + 1)
        x = 1 - (1 - x) ** r
        return x, r


# ---- loss.py ----

class TVLoss(torch.nn.Module):
    def forward(self, x):
        x = torch.log(x + 1e-3)
        h_tv = torch.pow((x[:, :, 1:, :] - x[:, :, :-1, :]), 2)
        w_tv = torch.pow((x[:, :, :, 1:] - x[:, :, :, :-1]), 2)
        return torch.mean(h_tv) + torch.mean(w_tv)


# ---- iqa.py ----

class IQA(nn.Module):
    def __init__(
        self,
    ):
        super().__init__()
        ps = 25
        self.exposed_level = 0.5
        self.mean_pool = torch.nn.Sequential(torch.nn.ReflectionPad2d(ps // 2), torch.nn.AvgPool2d(ps, stride=1))

    def forward(self, images):
        eps = 1 / 255.0
        max_rgb = torch.max(images, dim=1, keepdim=True)[0]
        min_rgb = torch.min(images, dim=1, keepdim=True)[0]
        saturation = (max_rgb - min_rgb + eps) / (max_rgb + eps)

        mean_rgb = self.mean_pool(images).mean(dim=1, keepdim=True)
        exposedness = torch.abs(mean_rgb - self.exposed_level) + eps

        contrast = self.mean_pool(images * images).mean(dim=1, keepdim=True) - mean_rgb**2
        return torch.mean((saturation * contrast) / exposedness, dim=[1], keepdim=True)


# ---- framework.py ----
class PSENet(LightningModule):
    def __init__(self, tv_w, gamma_lower, gamma_upper, number_refs, lr, afifi_evaluation=False):
        super().__init__()
        self.tv_w = tv_w
        self.gamma_lower = gamma_lower
        self.gamma_upper = gamma_upper
        self.number_refs = number_refs
        self.afifi_evaluation = afifi_evaluation
        self.lr = lr
        self.model = UnetTMO()
        self.mse = torch.nn.MSELoss()
        self.tv = TVLoss()
        self.iqa = IQA()
        self.saved_input = None
        self.saved_pseudo_gt = None

    def configure_optimizers(self):
        optimizer = torch.optim.Adam(self.model.parameters(), lr=self.lr, betas=[0.9, 0.99])
        scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, patience=10, factor=0.5)  # verbose=True in the repo; torch 2.13 dropped it
        return {"optimizer": optimizer, "lr_scheduler": scheduler, "monitor": "total_loss"}

    def training_epoch_end(self, outputs):
        sch = self.lr_schedulers()
        if isinstance(sch, torch.optim.lr_scheduler.ReduceLROnPlateau):
            sch.step(self.trainer.callback_metrics["total_loss"])

    def generate_pseudo_gt(self, im):
        bs, ch, h, w = im.shape
        underexposed_ranges = torch.linspace(0, self.gamma_upper, steps=self.number_refs + 1).to(im.device)[:-1]
        step_size = self.gamma_upper / self.number_refs
        underexposed_gamma = torch.exp(
            torch.rand([bs, self.number_refs], device=im.device) * step_size + underexposed_ranges[None, :]
        )
        overrexposed_ranges = torch.linspace(self.gamma_lower, 0, steps=self.number_refs + 1).to(im.device)[:-1]
        step_size = - self.gamma_lower / self.number_refs
        overrexposed_gamma = torch.exp(
            torch.rand([bs, self.number_refs], device=im.device) * overrexposed_ranges[None, :]
        )
        gammas = torch.cat([underexposed_gamma, overrexposed_gamma], dim=1)
        # gammas: [bs, nref], im: [bs, ch, h, w] -> synthetic_references: [bs, nref, ch, h, w]
        synthetic_references = 1 - (1 - im[:, None]) ** gammas[:, :, None, None, None]
        previous_iter_output = self.model(im)[0].clone().detach()
        references = torch.cat([im[:, None], previous_iter_output[:, None], synthetic_references], dim=1)
        nref = references.shape[1]
        scores = self.iqa(references.view(bs * nref, ch, h, w))
        scores = scores.view(bs, nref, 1, h, w)
        max_idx = torch.argmax(scores, dim=1)
        max_idx = max_idx.repeat(1, ch, 1, 1)[:, None]
        pseudo_gt = torch.gather(references, 1, max_idx)
        return pseudo_gt.squeeze(1)

    def training_step(self, batch, batch_idx):
        # a hack to get the output from previous iterator
        # In nth interator, we use (n - 1)th batch instead of n-th batch to update model's weight. n-th batch will be used to generate a pseudo gt with current model's weigh and then is saved to use in (n + 1)th interator

        # saving n-th input and n-th pseudo gt
        nth_input = batch
        nth_pseudo_gt = self.generate_pseudo_gt(batch)
        if self.saved_input is not None:
            # getting (n - 1)th input and (n - 1)-th pseudo gt -> calculate loss -> update model weight (handeled automatically by pytorch lightning)
            im = self.saved_input
            pred_im, pred_gamma = self.model(im)
            pseudo_gt = self.saved_pseudo_gt
            reconstruction_loss = self.mse(pred_im, pseudo_gt)
            tv_loss = self.tv(pred_gamma)
            loss = reconstruction_loss + tv_loss * self.tv_w

            # logging
            self.log(
                "train_loss/", {"reconstruction": reconstruction_loss, "tv": tv_loss}, on_epoch=True, on_step=False
            )
            self.log("total_loss", loss, on_epoch=True, on_step=False)
            if batch_idx == 0:
                visuals = [im, pseudo_gt, pred_im]
                visuals = torchvision.utils.make_grid([v[0] for v in visuals])
                self.logger.experiment.add_image("images", visuals, self.current_epoch)
        else:
            # skip updating model's weight at the first batch
            loss = None
            self.log("total_loss", 0, on_epoch=True, on_step=False)
        # saving n-th input and n-th pseudo gt
        self.saved_input = nth_input
        self.saved_pseudo_gt = nth_pseudo_gt
        return loss


if __name__ == "__main__":
    # configs/sice.yaml model args (trainer: max_epochs 140, train_batch_size 64), shrunk; random images for SICEDataModule
    pl.seed_everything(42)
    model = PSENet(tv_w=5, gamma_lower=-2, gamma_upper=3, number_refs=1, lr=5e-4)
    train_loader = [torch.rand(2, 3, 16, 16) for _ in range(3)]
    trainer = pl.Trainer(max_epochs=1)
    trainer.fit(model, train_loader)

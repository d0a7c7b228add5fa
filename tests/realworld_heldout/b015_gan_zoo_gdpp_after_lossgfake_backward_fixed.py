"""pytorch_GAN_zoo BaseGAN.optimizeParameters with GDPP on, after PR #85: `lossGFake.backward(retain_graph=True)` keeps the graph GDPPLoss backwards through."""
# outcome: ok
# source: https://github.com/facebookresearch/pytorch_GAN_zoo/issues/83
# repo: facebookresearch/pytorch_GAN_zoo
# category: retention
# twin: b014_gan_zoo_gdpp_after_lossgfake_backward.py
# Copyright (c) Facebook, Inc. and its affiliates. All Rights Reserved
from collections import OrderedDict
from copy import deepcopy

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim


# ---- models/utils/config.py ----
class BaseConfig():
    r"""
    An empty class used for configuration members
    """

    def __init__(self, orig=None):
        if orig is not None:
            print("cawet")


# ---- models/utils/utils.py ----
def finiteCheck(parameters):
    if isinstance(parameters, torch.Tensor):
        parameters = [parameters]
    parameters = list(filter(lambda p: p.grad is not None, parameters))

    for p in parameters:
        infGrads = torch.isinf(p.grad.data)
        p.grad.data[infGrads] = 0

        nanGrads = torch.isnan(p.grad.data)
        p.grad.data[nanGrads] = 0


# ---- models/loss_criterions/base_loss_criterions.py ----
class BaseLossWrapper:
    r"""
    Loss criterion class. Must define 4 members:
    sizeDecisionLayer : size of the decision layer of the discrimator

    getCriterion : how the loss is actually computed

    !! The activation function of the discriminator is computed within the
    loss !!
    """

    def __init__(self, device):
        self.device = device

    def getCriterion(self, input, status):
        r"""
        Given an input tensor and its targeted status (detected as real or
        detected as fake) build the associated loss

        Args:

            - input (Tensor): decision tensor build by the model's discrimator
            - status (bool): if True -> this tensor should have been detected
                             as a real input
                             else -> it shouldn't have
        """
        pass

class WGANGP(BaseLossWrapper):
    r"""
    Paper WGANGP loss : linear activation for the generator.
    https://arxiv.org/pdf/1704.00028.pdf
    """

    def __init__(self, device):

        self.generationActivation = None
        self.sizeDecisionLayer = 1

        BaseLossWrapper.__init__(self, device)

    def getCriterion(self, input, status):
        if status:
            return -input[:, 0].sum()
        return input[:, 0].sum()


class base_loss_criterions:
    WGANGP = WGANGP


# ---- models/loss_criterions/GDPP_loss.py (torch.symeig, gone from torch 2, as torch.linalg.eigh) ----

def GDPPLoss(phiFake, phiReal, backward=True):
    r"""
    Implementation of the GDPP loss. Can be used with any kind of GAN
    architecture.

    Args:

        phiFake (tensor) : last feature layer of the discriminator on real data
        phiReal (tensor) : last feature layer of the discriminator on fake data
        backward (bool)  : should we perform the backward operation ?

    Returns:

        Loss's value. The backward operation in performed within this operator
    """
    def compute_diversity(phi):
        phi = F.normalize(phi, p=2, dim=1)
        SB = torch.mm(phi, phi.t())
        eigVals, eigVecs = torch.linalg.eigh(SB)
        return eigVals, eigVecs

    def normalize_min_max(eigVals):
        minV, maxV = torch.min(eigVals), torch.max(eigVals)
        return (eigVals - minV) / (maxV - minV)

    fakeEigVals, fakeEigVecs = compute_diversity(phiFake)
    realEigVals, realEigVecs = compute_diversity(phiReal)

    # Scaling factor to make the two losses operating in comparable ranges.
    magnitudeLoss = 0.0001 * F.mse_loss(target=realEigVals, input=fakeEigVals)
    structureLoss = -torch.sum(torch.mul(fakeEigVecs, realEigVecs), 0)
    normalizedRealEigVals = normalize_min_max(realEigVals)
    weightedStructureLoss = torch.sum(
        torch.mul(normalizedRealEigVals, structureLoss))
    gdppLoss = magnitudeLoss + weightedStructureLoss

    if backward:
        gdppLoss.backward(retain_graph=True)

    return gdppLoss.item()


# ---- models/loss_criterions/gradient_losses.py ----

def WGANGPGradientPenalty(input, fake, discriminator, weight, backward=True):
    r"""
    Gradient penalty as described in
    "Improved Training of Wasserstein GANs"
    https://arxiv.org/pdf/1704.00028.pdf

    Args:

        - input (Tensor): batch of real data
        - fake (Tensor): batch of generated data. Must have the same size
          as the input
        - discrimator (nn.Module): discriminator network
        - weight (float): weight to apply to the penalty term
        - backward (bool): loss backpropagation
    """

    batchSize = input.size(0)
    alpha = torch.rand(batchSize, 1)
    alpha = alpha.expand(batchSize, int(input.nelement() /
                                        batchSize)).contiguous().view(
                                            input.size())
    alpha = alpha.to(input.device)
    interpolates = alpha * input + ((1 - alpha) * fake)

    interpolates = torch.autograd.Variable(
        interpolates, requires_grad=True)

    decisionInterpolate = discriminator(interpolates, False)
    decisionInterpolate = decisionInterpolate[:, 0].sum()

    gradients = torch.autograd.grad(outputs=decisionInterpolate,
                                    inputs=interpolates,
                                    create_graph=True, retain_graph=True)

    gradients = gradients[0].view(batchSize, -1)
    gradients = (gradients * gradients).sum(dim=1).sqrt()
    gradient_penalty = (((gradients - 1.0)**2)).sum() * weight

    if backward:
        gradient_penalty.backward(retain_graph=True)

    return gradient_penalty.item()


def logisticGradientPenalty(input, discrimator, weight, backward=True):
    r"""
    Gradient penalty described in "Which training method of GANs actually
    converge
    https://arxiv.org/pdf/1801.04406.pdf

    Args:

        - input (Tensor): batch of real data
        - discrimator (nn.Module): discriminator network
        - weight (float): weight to apply to the penalty term
        - backward (bool): loss backpropagation
    """

    locInput = torch.autograd.Variable(
        input, requires_grad=True)
    gradients = torch.autograd.grad(outputs=discrimator(locInput)[:, 0].sum(),
                                    inputs=locInput,
                                    create_graph=True, retain_graph=True)[0]

    gradients = gradients.view(gradients.size(0), -1)
    gradients = (gradients * gradients).sum(dim=1).mean()

    gradient_penalty = gradients * weight
    if backward:
        gradient_penalty.backward(retain_graph=True)

    return gradient_penalty.item()


# ---- models/base_GAN.py ----
class BaseGAN():
    r"""Abstract class: the basic framework for GAN training.
    """

    def __init__(self,
                 dimLatentVector,
                 dimOutput=3,
                 useGPU=True,
                 baseLearningRate=0.001,
                 lossMode='WGANGP',
                 attribKeysOrder=None,
                 weightConditionD=0.0,
                 weightConditionG=0.0,
                 logisticGradReal=0.0,
                 lambdaGP=0.,
                 epsilonD=0.,
                 GDPP=False,
                 **kwargs):
        r"""
        Args:
            dimLatentVector (int): dimension of the latent vector in the model
            dimOutput (int): number of channels of the output image
            useGPU (bool): set to true if the computation should be distribued
                           in the availanle GPUs
            baseLearningRate (float): target learning rate.
            lossMode (string): loss used by the model. Must be one of the
                               following options
                              * 'MSE' : mean square loss.
                              * 'DCGAN': cross entropy loss
                              * 'WGANGP': https://arxiv.org/pdf/1704.00028.pdf
                              * 'Logistic': https://arxiv.org/pdf/1801.04406.pdf
            attribKeysOrder (dict): if not None, activate AC-GAN. In this case,
                                    both the generator and the discrimator are
                                    trained on abelled data.
            weightConditionD (float): in AC-GAN, weight of the classification
                                      loss applied to the discriminator
            weightConditionG (float): in AC-GAN, weight of the classification
                                      loss applied to the generator
            logisticGradReal (float): gradient penalty for the logistic loss
            lambdaGP (float): if > 0, weight of the gradient penalty (WGANGP)
            epsilonD (float): if > 0, penalty on |D(X)|**2
            GDPP (bool): if true activate GDPP loss https://arxiv.org/abs/1812.00068

        """

        if lossMode not in ['MSE', 'WGANGP', 'DCGAN', 'Logistic']:
            raise ValueError(
                "lossMode should be one of the following : ['MSE', 'WGANGP', \
                'DCGAN', 'Logistic']")

        if 'config' not in vars(self):
            self.config = BaseConfig()

        if 'trainTmp' not in vars(self):
            self.trainTmp = BaseConfig()

        self.useGPU = useGPU and torch.cuda.is_available()
        if self.useGPU:
            self.device = torch.device("cuda:0")
            self.n_devices = torch.cuda.device_count()
        else:
            self.device = torch.device("cpu")
            self.n_devices = 1

        # Latent vector dimension
        self.config.noiseVectorDim = dimLatentVector

        # Output image dimension
        self.config.dimOutput = dimOutput

        # Actual learning rate
        self.config.learningRate = baseLearningRate

        # AC-GAN ?
        self.config.attribKeysOrder = deepcopy(attribKeysOrder)
        self.config.categoryVectorDim = 0
        self.config.weightConditionG = weightConditionG
        self.config.weightConditionD = weightConditionD
        self.ClassificationCriterion = None
        self.initializeClassificationCriterion()

        # GDPP
        self.config.GDPP = GDPP

        self.config.latentVectorDim = self.config.noiseVectorDim \
            + self.config.categoryVectorDim

        # Loss criterion
        self.config.lossCriterion = lossMode
        self.lossCriterion = getattr(
            base_loss_criterions, lossMode)(self.device)

        # WGAN-GP
        self.config.lambdaGP = lambdaGP

        # Weight on D's output
        self.config.epsilonD = epsilonD

        # Initialize the generator and the discriminator
        self.netD = self.getNetD()
        self.netG = self.getNetG()

        # Move the networks to the gpu
        self.updateSolversDevice()

        # Logistic loss
        self.config.logisticGradReal = logisticGradReal


    def test(self, input, getAvG=False, toCPU=True):
        r"""
        Generate some data given the input latent vector.

        Args:
            input (torch.tensor): input latent vector
        """
        input = input.to(self.device)
        if getAvG:
            if toCPU:
                return self.avgG(input).cpu()
            else:
                return self.avgG(input)
        elif toCPU:
            return self.netG(input).detach().cpu()
        else:
            return self.netG(input).detach()

    def buildAvG(self):
        r"""
        Create and upload a moving average generator.
        """
        self.avgG = deepcopy(self.getOriginalG())
        for param in self.avgG.parameters():
            param.requires_grad = False

        if self.useGPU:
            self.avgG = nn.DataParallel(self.avgG)
            self.avgG.to(self.device)

    def optimizeParameters(self, input_batch, inputLabels=None):
        r"""
        Update the discrimator D using the given "real" inputs.

        Args:
            input (torch.tensor): input batch of real data
            inputLabels (torch.tensor): labels of the real data

        """

        allLosses = {}

        # Retrieve the input data
        self.real_input, self.realLabels = input_batch.to(self.device), None

        if self.config.attribKeysOrder is not None:
            self.realLabels = inputLabels.to(self.device)

        n_samples = self.real_input.size()[0]

        # Update the discriminator
        self.optimizerD.zero_grad()

        # #1 Real data
        predRealD = self.netD(self.real_input, False)

        # Classification criterion
        allLosses["lossD_classif"] = \
            self.classificationPenalty(predRealD,
                                       self.realLabels,
                                       self.config.weightConditionD,
                                       backward=True)

        lossD = self.lossCriterion.getCriterion(predRealD, True)
        allLosses["lossD_real"] = lossD.item()

        # #2 Fake data
        inputLatent, targetRandCat = self.buildNoiseData(n_samples)
        predFakeG = self.netG(inputLatent).detach()
        predFakeD = self.netD(predFakeG, False)

        lossDFake = self.lossCriterion.getCriterion(predFakeD, False)
        allLosses["lossD_fake"] = lossDFake.item()
        lossD += lossDFake

        # #3 WGANGP gradient loss
        if self.config.lambdaGP > 0:
            allLosses["lossD_Grad"] = WGANGPGradientPenalty(self.real_input,
                                                            predFakeG,
                                                            self.netD,
                                                            self.config.lambdaGP,
                                                            backward=True)

        # #4 Epsilon loss
        if self.config.epsilonD > 0:
            lossEpsilon = (predRealD[:, 0] ** 2).sum() * self.config.epsilonD
            lossD += lossEpsilon
            allLosses["lossD_Epsilon"] = lossEpsilon.item()


        # # 5 Logistic gradient loss
        if self.config.logisticGradReal > 0:
            allLosses["lossD_logistic"] = \
                logisticGradientPenalty(self.real_input, self.netD,
                                        self.config.logisticGradReal,
                                        backward=True)

        lossD.backward(retain_graph=True)
        finiteCheck(self.getOriginalD().parameters())
        self.optimizerD.step()

        # Logs
        lossD = 0
        for key, val in allLosses.items():

            if key.find("lossD") == 0:
                lossD += val

        allLosses["lossD"] = lossD

        # Update the generator
        self.optimizerG.zero_grad()
        self.optimizerD.zero_grad()

        # #1 Image generation
        inputNoise, targetCatNoise = self.buildNoiseData(n_samples)
        predFakeG = self.netG(inputNoise)

        # #2 Status evaluation
        predFakeD, phiGFake = self.netD(predFakeG, True)

        # #2 Classification criterion
        allLosses["lossG_classif"] = \
            self.classificationPenalty(predFakeD,
                                       targetCatNoise,
                                       self.config.weightConditionG,
                                       backward=True)

        # #3 GAN criterion
        lossGFake = self.lossCriterion.getCriterion(predFakeD, True)
        allLosses["lossG_fake"] = lossGFake.item()
        lossGFake.backward(retain_graph=True)

        if self.config.GDPP:
            _, phiDReal = self.netD.forward(self.real_input, True)
            allLosses["lossG_GDPP"] = GDPPLoss(phiDReal, phiGFake,
                                               backward=True)

        finiteCheck(self.getOriginalG().parameters())
        self.optimizerG.step()

        lossG = 0
        for key, val in allLosses.items():

            if key.find("lossG") == 0:
                lossG += val

        allLosses["lossG"] = lossG

        # Update the moving average if relevant
        for p, avg_p in zip(self.getOriginalG().parameters(),
                            self.getOriginalAvgG().parameters()):
            avg_p.mul_(0.999).add_(0.001, p.data)

        return allLosses

    def initializeClassificationCriterion(self):
        r"""
        For labelled datasets: initialize the classification criterion.
        """

        if self.config.weightConditionD != 0 and \
                not self.config.attribKeysOrder:
            raise AttributeError("If the weight on the conditional term isn't "
                                 "null, then a attribute dictionnery should be"
                                 " defined")

        if self.config.weightConditionG != 0 and \
                not self.config.attribKeysOrder:
            raise AttributeError("If the weight on the conditional term isn't \
                                 null, then a attribute dictionnary should be \
                                 defined")

    def updateSolversDevice(self, buildAvG=True):
        r"""
        Move the current networks and solvers to the GPU.
        This function must be called each time netG or netD is modified
        """
        if buildAvG:
            self.buildAvG()

        if not isinstance(self.netD, nn.DataParallel) and self.useGPU:
            self.netD = nn.DataParallel(self.netD)
        if not isinstance(self.netG, nn.DataParallel) and self.useGPU:
            self.netG = nn.DataParallel(self.netG)

        self.netD.to(self.device)
        self.netG.to(self.device)

        self.optimizerD = self.getOptimizerD()
        self.optimizerG = self.getOptimizerG()

        self.optimizerD.zero_grad()
        self.optimizerG.zero_grad()

    def buildNoiseData(self, n_samples, inputLabels=None):
        r"""
        Build a batch of latent vectors for the generator.

        Args:
            n_samples (int): number of vector in the batch
        """

        inputLatent = torch.randn(
            n_samples, self.config.noiseVectorDim).to(self.device)

        if self.config.attribKeysOrder:

            if inputLabels is not None:
                latentRandCat = self.ClassificationCriterion.buildLatentCriterion(inputLabels)
                targetRandCat = inputLabels
            else:
                targetRandCat, latentRandCat = \
                    self.ClassificationCriterion.buildRandomCriterionTensor(n_samples)

            targetRandCat = targetRandCat.to(self.device)
            latentRandCat = latentRandCat.to(self.device)
            inputLatent = torch.cat((inputLatent, latentRandCat), dim=1)

            return inputLatent, targetRandCat

        return inputLatent, None

    def buildNoiseDataWithConstraints(self, n, labels):

        constrainPart = \
            self.ClassificationCriterion.generateConstraintsFromVector(n,
                                                                       labels)
        inputLatent = torch.randn((n, self.config.noiseVectorDim, 1, 1))

        return torch.cat((inputLatent, constrainPart), dim=1)

    def getOriginalG(self):
        r"""
        Retrieve the original G network. Use this function
        when you want to modify G after the initialization
        """
        if isinstance(self.netG, nn.DataParallel):
            return self.netG.module
        return self.netG

    def getOriginalAvgG(self):
        r"""
        Retrieve the original avG network. Use this function
        when you want to modify avG after the initialization
        """
        if isinstance(self.avgG, nn.DataParallel):
            return self.avgG.module
        return self.avgG

    def getOriginalD(self):
        r"""
        Retrieve the original D network. Use this function
        when you want to modify D after the initialization
        """
        if isinstance(self.netD, nn.DataParallel):
            return self.netD.module
        return self.netD

    def getNetG(self):
        r"""
        The generator should be defined here.
        """
        pass

    def getNetD(self):
        r"""
        The discrimator should be defined here.
        """
        pass

    def getOptimizerD(self):
        r"""
        Optimizer of the discriminator.
        """
        pass

    def getOptimizerG(self):
        r"""
        Optimizer of the generator.
        """
        pass

    def classificationPenalty(self, outputD, target, weight, backward=True):
        r"""
        Compute the classification penalty associated with the current
        output

        Args:
            - outputD (tensor): discriminator's output
            - target (tensor): ground truth labels
            - weight (float): weight to give to this loss
            - backward (bool): do we back-propagate the loss ?

        Returns:
            - outputD (tensor): updated discrimator's output
            - loss (float): value of the classification loss
        """

        if self.ClassificationCriterion is not None:
            loss = weight * \
                self.ClassificationCriterion.getCriterion(outputD, target)
            if backward:
                loss.backward(retain_graph=True)

            return loss.item()
        return 0


# ---- models/networks/DCGAN_nets.py ----

def weights_init(m):
    classname = m.__class__.__name__
    if classname.find('Conv') != -1:
        m.weight.data.normal_(0.0, 0.02)
    elif classname.find('BatchNorm') != -1:
        m.weight.data.normal_(1.0, 0.02)
        m.bias.data.fill_(0)


class GNet(nn.Module):
    def __init__(self,
                 dimLatentVector,
                 dimOutput,
                 dimModelG,
                 depthModel=3,
                 generationActivation=nn.Tanh()):
        super(GNet, self).__init__()

        self.depthModel = depthModel
        self.refDim = dimModelG

        self.initFormatLayer(dimLatentVector)

        currDepth = int(dimModelG * (2**depthModel))

        sequence = OrderedDict([])
        # input is Z, going into a convolution
        sequence["batchNorm0"] = nn.BatchNorm2d(currDepth)
        sequence["relu0"] = nn.ReLU(True)

        for i in range(depthModel):

            nextDepth = int(currDepth / 2)

            # state size. (currDepth) x 2**(i+1) x 2**(i+1)
            sequence["convTranspose" + str(i+1)] = nn.ConvTranspose2d(
                currDepth, nextDepth, 4, 2, 1, bias=False)
            sequence["batchNorm" + str(i+1)] = nn.BatchNorm2d(nextDepth)
            sequence["relu" + str(i+1)] = nn.ReLU(True)

            currDepth = nextDepth

        sequence["outlayer"] = nn.ConvTranspose2d(
            dimModelG, dimOutput, 4, 2, 1, bias=False)

        self.outputAcctivation = generationActivation

        self.main = nn.Sequential(sequence)
        self.main.apply(weights_init)

    def initFormatLayer(self, dimLatentVector):

        currDepth = int(self.refDim * (2**self.depthModel))
        self.formatLayer = nn.ConvTranspose2d(
            dimLatentVector, currDepth, 4, 1, 0, bias=False)

    def forward(self, input):

        x = input.view(-1, input.size(1), 1, 1)
        x = self.formatLayer(x)
        x = self.main(x)

        if self.outputAcctivation is None:
            return x

        return self.outputAcctivation(x)


class DNet(nn.Module):
    def __init__(self,
                 dimInput,
                 dimModelD,
                 sizeDecisionLayer,
                 depthModel=3):
        super(DNet, self).__init__()

        currDepth = dimModelD
        sequence = OrderedDict([])

        # input is (nc) x 2**(depthModel + 3) x 2**(depthModel + 3)
        sequence["convTranspose" +
                 str(depthModel)] = nn.Conv2d(dimInput, currDepth,
                                              4, 2, 1, bias=False)
        sequence["relu" + str(depthModel)] = nn.LeakyReLU(0.2, inplace=True)

        for i in range(depthModel):

            index = depthModel - i - 1
            nextDepth = currDepth * 2

            # state size.
            # (currDepth) x 2**(depthModel + 2 -i) x 2**(depthModel + 2 -i)
            sequence["convTranspose" +
                     str(index)] = nn.Conv2d(currDepth, nextDepth,
                                             4, 2, 1, bias=False)
            sequence["batchNorm" + str(index)] = nn.BatchNorm2d(nextDepth)
            sequence["relu" + str(index)] = nn.LeakyReLU(0.2, inplace=True)

            currDepth = nextDepth

        self.dimFeatureMap = currDepth

        self.main = nn.Sequential(sequence)
        self.main.apply(weights_init)

        self.initDecisionLayer(sizeDecisionLayer)

    def initDecisionLayer(self, sizeDecisionLayer):
        self.decisionLayer = nn.Conv2d(
            self.dimFeatureMap, sizeDecisionLayer, 4, 1, 0, bias=False)
        self.decisionLayer.apply(weights_init)
        self.sizeDecisionLayer = sizeDecisionLayer

    def forward(self, input, getFeature = False):
        x = self.main(input)

        if getFeature:

            return self.decisionLayer(x).view(-1, self.sizeDecisionLayer), \
                   x.view(-1, self.dimFeatureMap * 16)

        x = self.decisionLayer(x)
        return x.view(-1, self.sizeDecisionLayer)


# ---- models/DCGAN.py ----

class DCGAN(BaseGAN):
    r"""
    Implementation of DCGAN
    """

    def __init__(self,
                 dimLatentVector=64,
                 dimG=64,
                 dimD=64,
                 depth=3,
                 **kwargs):
        r"""
        Args:

        Specific Arguments:
            - latentVectorDim (int): dimension of the input latent vector
            - dimG (int): reference depth of a layer in the generator
            - dimD (int): reference depth of a layer in the discriminator
            - depth (int): number of convolution layer in the model
            - **kwargs: arguments of the BaseGAN class

        """
        if 'config' not in vars(self):
            self.config = BaseConfig()

        self.config.dimG = dimG
        self.config.dimD = dimD
        self.config.depth = depth

        BaseGAN.__init__(self, dimLatentVector, **kwargs)

    def getNetG(self):

        gnet = GNet(self.config.latentVectorDim,
                    self.config.dimOutput,
                    self.config.dimG,
                    depthModel=self.config.depth,
                    generationActivation=self.lossCriterion.generationActivation)
        return gnet

    def getNetD(self):

        dnet = DNet(self.config.dimOutput,
                    self.config.dimD,
                    self.lossCriterion.sizeDecisionLayer
                    + self.config.categoryVectorDim,
                    depthModel=self.config.depth)
        return dnet

    def getOptimizerD(self):
        return optim.Adam(filter(lambda p: p.requires_grad, self.netD.parameters()),
                          betas=[0.5, 0.999], lr=self.config.learningRate)

    def getOptimizerG(self):
        return optim.Adam(filter(lambda p: p.requires_grad, self.netG.parameters()),
                          betas=[0.5, 0.999], lr=self.config.learningRate)

    def getSize(self):
        size = 2**(self.config.depth + 3)
        return (size, size)


# ---- models/trainer/gan_trainer.py, shrunk: DCGAN with the GDPP loss (`--GDPP True`) on random 32x32 images ----
if __name__ == "__main__":
    model = DCGAN(dimLatentVector=16,
                  dimG=8,
                  dimD=8,
                  depth=2,
                  useGPU=False,
                  baseLearningRate=0.0002,
                  lossMode='WGANGP',
                  lambdaGP=10.,
                  epsilonD=0.001,
                  GDPP=True)
    for iter in range(2):
        input_real = torch.randn(4, 3, 32, 32)
        allLosses = model.optimizeParameters(input_real, inputLabels=None)
        print(iter, allLosses)

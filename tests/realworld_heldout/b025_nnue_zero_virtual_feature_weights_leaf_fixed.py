"""nnue-pytorch NNUE as PR #75 fixed it: _zero_virtual_feature_weights zeroes the virtual-feature columns of the input weight under torch.no_grad(), then the LightningModule trains."""
# outcome: ok
# source: https://github.com/official-stockfish/nnue-pytorch/pull/75
# repo: official-stockfish/nnue-pytorch
# category: leaf
# twin: b024_nnue_zero_virtual_feature_weights_leaf.py
import math
from collections import OrderedDict

import torch
from torch import nn
import torch.nn.functional as F
from torch.optim.optimizer import Optimizer, required
import pytorch_lightning as pl


# ---- feature_block.py ----
def _get_main_factor_name(full_name):
    return full_name.replace('^', '')

class FeatureBlock:
    '''
    This is the base class for all the network input features.
    All features must inherit from this class.
    It abstracts a named set of features in a way that
    allows seamless introduction of factorizers.

    For example a set of HalfKP features is a subclass of this class, and
    so is the HalfKP^ feature set (where "^" denotes that it's factorized).

    There are 3 fundamental things about a feature block which it needs for construction:
        - name - whatever, just please use ascii. Also we'd like "^" to be reserved to
                 denote that the block is a factorized version of some other block.
        - hash - a 32 bit unsigned integer, as defined in the original nodchip trainer
        - factors - the ordered list of named "festure subblocks". If there's more than one
                    it's assumed that it's a factorized feature block.

    More about factors, because it's the fundamental building block.
    A block can have just one factor, like HalfKP, but sometimes it's possible to
    factorize some features further. Ideally we don't want to have multiple
    features talking about the same thing when the net is actually used for play,
    because it's wasteful, but it's helpful during training because it makes it
    easier to generalize over similar positions. This is for example utilized by HalfKP^,
    which defines 3 factors: HalfKP, HalfK, and P.
    Factors are passed to the constructor as an OrderedDict from string to the number of dimensions.
    The first factor is the "real" factor (or "main" factor), one that is supposed to be used for play.
    The following factors (if any) are the "virtual" factors, and are only used for training.
    Based on these factors and their dimensions FeatureBlock defines 3 values:
        - num_real_features - the number of unfactorized features that the resulting net will use in play
        - num_virtual_features - the number of additional features used for learning
                                 that will be coalesced when converting to .nnue
        - num_features - the total number of features defined by the factors.
                         should num_real_features + num_virtual_features

    FeatureBlock provides default method implementations that abstract away the
    factorized/unfactorized nature of the feature block. These methods are described in
    their own docstrings.

    The only method that the superclass of FeatureBlock must define is
    get_active_features (def get_active_features(self, board: chess.Board)),
    which takes the board and returns the list of indices of the features
    that are active for this board.
    '''

    def __init__(self, name, hash, factors):
        if not isinstance(factors, OrderedDict):
            raise Exception('Factors must be an collections.OrderedDict')

        self.name = name
        self.hash = hash
        self.factors = factors
        self.num_real_features = factors[_get_main_factor_name(name)]
        self.num_features = sum(v for n, v in factors.items())
        self.num_virtual_features = self.num_features - self.num_real_features

    def get_main_factor_name(self):
        return _get_main_factor_name(self.name)

    '''
    This method represents the default factorizer. If your feature block
    has multiple factors you need to override this method to return
    a list of factors for a given feature.
    '''
    def get_feature_factors(self, idx):
        return [idx]

    '''
    This method takes a string name of a factor and returns the offset of the
    first feature in this factor when consulted with the sizes of the previous factors.
    '''
    def get_factor_base_feature(self, name):
        offset = 0
        for n, s in self.factors.items():
            if n == name:
                return offset

            offset += s

        raise Exception('No factor named {} in {}'.format(name, self.name))


# ---- feature_set.py ----

def _calculate_features_hash(features):
    if len(features) == 1:
        return features[0].hash

    tail_hash = calculate_features_hash(features[1:])
    return features[0].hash ^ (tail_hash << 1) ^ (tail_hash >> 1) & 0xffffffff

class FeatureSet:
    '''
    A feature set is nothing more than a list of named FeatureBlocks.
    It itself functions similarily to a feature block, but we don't want to be
    explicit about it as we don't want it to be used as a building block for other
    feature sets. You can think of this class as a composite, but not the full extent.
    It is basically a concatenation of feature blocks.
    '''

    def __init__(self, features):
        for feature in features:
            if not isinstance(feature, FeatureBlock):
                raise Exception('All features must subclass FeatureBlock')

        self.features = features
        self.hash = _calculate_features_hash(features)
        self.name = '+'.join(feature.name for feature in features)
        self.num_real_features = sum(feature.num_real_features for feature in features)
        self.num_virtual_features = sum(feature.num_virtual_features for feature in features)
        self.num_features = sum(feature.num_features for feature in features)

    '''
    This method returns the feature ranges for the virtual factors of the
    underlying feature blocks. This is useful to know during initialization,
    when we want to zero initialize the virtual feature weights, but give some other
    values to the real feature weights.
    '''
    def get_virtual_feature_ranges(self):
        ranges = []
        offset = 0
        for feature in self.features:
            if feature.num_virtual_features:
                ranges.append((offset + feature.num_real_features, offset + feature.num_features))
            offset += feature.num_features

        return ranges

# ---- halfkp.py (the python-chess board encoders, unused when training from the binpack loader, left out) ----
NUM_SQ = 64
NUM_PT = 10
NUM_PLANES = (NUM_SQ * NUM_PT + 1)

class Features(FeatureBlock):
  def __init__(self):
    super(Features, self).__init__('HalfKP', 0x5d69d5b8, OrderedDict([('HalfKP', NUM_PLANES * NUM_SQ)]))

class FactorizedFeatures(FeatureBlock):
  def __init__(self):
    super(FactorizedFeatures, self).__init__('HalfKP^', 0x5d69d5b8, OrderedDict([('HalfKP', NUM_PLANES * NUM_SQ), ('HalfK', NUM_SQ), ('P', NUM_SQ * 10 )]))
    self.base = Features()

'''
This is used by the features module for discovery of feature blocks.
'''
def get_feature_block_clss():
  return [Features, FactorizedFeatures]


# ---- features.py ----
_feature_blocks_by_name = dict()

def _add_feature_block(feature_block_cls):
  feature_block = feature_block_cls()
  _feature_blocks_by_name[feature_block.name] = feature_block

def get_feature_blocks_from_names(names):
  return [_feature_blocks_by_name[name] for name in names]

def get_feature_set_from_name(name):
  feature_block_names = name.split('+')
  blocks = get_feature_blocks_from_names(feature_block_names)
  return FeatureSet(blocks)

for feature_block_cls in get_feature_block_clss():
  _add_feature_block(feature_block_cls)


# ---- ranger.py ----
from torch.optim.optimizer import Optimizer, required


class Ranger(Optimizer):

    def __init__(self, params, lr=1e-3,                       # lr
                 alpha=0.5, k=6, N_sma_threshhold=5,           # Ranger options
                 betas=(.95, 0.999), eps=1e-5, weight_decay=0,  # Adam options
                 # Gradient centralization on or off, applied to conv layers only or conv + fc layers
                 use_gc=True, gc_conv_only=False
                 ):

        # parameter checks
        if not 0.0 <= alpha <= 1.0:
            raise ValueError(f'Invalid slow update rate: {alpha}')
        if not 1 <= k:
            raise ValueError(f'Invalid lookahead steps: {k}')
        if not lr > 0:
            raise ValueError(f'Invalid Learning Rate: {lr}')
        if not eps > 0:
            raise ValueError(f'Invalid eps: {eps}')

        # parameter comments:
        # beta1 (momentum) of .95 seems to work better than .90...
        # N_sma_threshold of 5 seems better in testing than 4.
        # In both cases, worth testing on your dataset (.90 vs .95, 4 vs 5) to make sure which works best for you.

        # prep defaults and init torch.optim base
        defaults = dict(lr=lr, alpha=alpha, k=k, step_counter=0, betas=betas,
                        N_sma_threshhold=N_sma_threshhold, eps=eps, weight_decay=weight_decay)
        super().__init__(params, defaults)

        # adjustable threshold
        self.N_sma_threshhold = N_sma_threshhold

        # look ahead params

        self.alpha = alpha
        self.k = k

        # radam buffer for state
        self.radam_buffer = [[None, None, None] for ind in range(10)]

        # gc on or off
        self.use_gc = use_gc

        # level of gradient centralization
        self.gc_gradient_threshold = 3 if gc_conv_only else 1

        print(
            f"Ranger optimizer loaded. \nGradient Centralization usage = {self.use_gc}")
        if (self.use_gc and self.gc_gradient_threshold == 1):
            print(f"GC applied to both conv and fc layers")
        elif (self.use_gc and self.gc_gradient_threshold == 3):
            print(f"GC applied to conv layers only")

    def __setstate__(self, state):
        print("set state called")
        super(Ranger, self).__setstate__(state)

    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()

        # Evaluate averages and grad, update param tensors
        for group in self.param_groups:

            for p in group['params']:
                if p.grad is None:
                    continue
                grad = p.grad.data.float()

                if grad.is_sparse:
                    raise RuntimeError(
                        'Ranger optimizer does not support sparse gradients')

                p_data_fp32 = p.data.float()

                state = self.state[p]  # get state dict for this param

                if len(state) == 0:  # if first time to run...init dictionary with our desired entries
                    # if self.first_run_check==0:
                    # self.first_run_check=1
                    #print("Initializing slow buffer...should not see this at load from saved model!")
                    state['step'] = 0
                    state['exp_avg'] = torch.zeros_like(p_data_fp32)
                    state['exp_avg_sq'] = torch.zeros_like(p_data_fp32)

                    # look ahead weight storage now in state dict
                    state['slow_buffer'] = torch.empty_like(p.data)
                    state['slow_buffer'].copy_(p.data)

                else:
                    state['exp_avg'] = state['exp_avg'].type_as(p_data_fp32)
                    state['exp_avg_sq'] = state['exp_avg_sq'].type_as(
                        p_data_fp32)

                # begin computations
                exp_avg, exp_avg_sq = state['exp_avg'], state['exp_avg_sq']
                beta1, beta2 = group['betas']

                # GC operation for Conv layers and FC layers
                if grad.dim() > self.gc_gradient_threshold:
                    grad.add_(-grad.mean(dim=tuple(range(1, grad.dim())), keepdim=True))

                state['step'] += 1

                # compute variance mov avg
                exp_avg_sq.mul_(beta2).addcmul_(1 - beta2, grad, grad)
                # compute mean moving avg
                exp_avg.mul_(beta1).add_(1 - beta1, grad)

                buffered = self.radam_buffer[int(state['step'] % 10)]

                if state['step'] == buffered[0]:
                    N_sma, step_size = buffered[1], buffered[2]
                else:
                    buffered[0] = state['step']
                    beta2_t = beta2 ** state['step']
                    N_sma_max = 2 / (1 - beta2) - 1
                    N_sma = N_sma_max - 2 * \
                        state['step'] * beta2_t / (1 - beta2_t)
                    buffered[1] = N_sma
                    if N_sma > self.N_sma_threshhold:
                        step_size = math.sqrt((1 - beta2_t) * (N_sma - 4) / (N_sma_max - 4) * (
                            N_sma - 2) / N_sma * N_sma_max / (N_sma_max - 2)) / (1 - beta1 ** state['step'])
                    else:
                        step_size = 1.0 / (1 - beta1 ** state['step'])
                    buffered[2] = step_size

                if group['weight_decay'] != 0:
                    p_data_fp32.add_(-group['weight_decay']
                                     * group['lr'], p_data_fp32)

                # apply lr
                if N_sma > self.N_sma_threshhold:
                    denom = exp_avg_sq.sqrt().add_(group['eps'])
                    p_data_fp32.addcdiv_(-step_size *
                                         group['lr'], exp_avg, denom)
                else:
                    p_data_fp32.add_(-step_size * group['lr'], exp_avg)

                p.data.copy_(p_data_fp32)

                # integrated look ahead...
                # we do it at the param level instead of group level
                if state['step'] % group['k'] == 0:
                    # get access to slow param tensor
                    slow_p = state['slow_buffer']
                    # (fast weights - slow weights) * alpha
                    slow_p.add_(self.alpha, p.data - slow_p)
                    # copy interpolated weights to RAdam param tensor
                    p.data.copy_(slow_p)

        return loss


# ---- model.py ----
class ranger:
  Ranger = Ranger


# 3 layer fully connected network
L1 = 256
L2 = 32
L3 = 32

class NNUE(pl.LightningModule):
  """
  This model attempts to directly represent the nodchip Stockfish trainer methodology.

  lambda_ = 0.0 - purely based on game results
  lambda_ = 1.0 - purely based on search scores

  It is not ideal for training a Pytorch quantized model directly.
  """
  def __init__(self, feature_set, lambda_=1.0):
    super(NNUE, self).__init__()
    self.input = nn.Linear(feature_set.num_features, L1)
    self.feature_set = feature_set
    self.l1 = nn.Linear(2 * L1, L2)
    self.l2 = nn.Linear(L2, L3)
    self.output = nn.Linear(L3, 1)
    self.lambda_ = lambda_

    self._zero_virtual_feature_weights()

  '''
  We zero all virtual feature weights because during serialization to .nnue
  we compute weights for each real feature as being the sum of the weights for
  the real feature in question and the virtual features it can be factored to.
  This means that if we didn't initialize the virtual feature weights to zero
  we would end up with the real features having effectively unexpected values
  at initialization - following the bell curve based on how many factors there are.
  '''
  def _zero_virtual_feature_weights(self):
    weights = self.input.weight
    with torch.no_grad():
      for a, b in self.feature_set.get_virtual_feature_ranges():
        weights[:, a:b] = 0.0
    self.input.weight = nn.Parameter(weights)

  '''
  This method attempts to convert the model from using the self.feature_set
  to new_feature_set.
  '''
  def set_feature_set(self, new_feature_set):
    if self.feature_set.name == new_feature_set.name:
      return

    # TODO: Implement this for more complicated conversions.
    #       Currently we support only a single feature block.
    if len(self.feature_set.features) > 1:
      raise Exception('Cannot change feature set from {} to {}.'.format(self.feature_set.name, new_feature_set.name))

    # Currently we only support conversion for feature sets with
    # one feature block each so we'll dig the feature blocks directly
    # and forget about the set.
    old_feature_block = self.feature_set.features[0]
    new_feature_block = new_feature_set.features[0]

    # next(iter(new_feature_block.factors)) is the way to get the
    # first item in a OrderedDict. (the ordered dict being str : int
    # mapping of the factor name to its size).
    # It is our new_feature_factor_name.
    # For example old_feature_block.name == "HalfKP"
    # and new_feature_factor_name == "HalfKP^"
    # We assume here that the "^" denotes factorized feature block
    # and we would like feature block implementers to follow this convention.
    # So if our current feature_set matches the first factor in the new_feature_set
    # we only have to add the virtual feature on top of the already existing real ones.
    if old_feature_block.name == next(iter(new_feature_block.factors)):
      # We can just extend with zeros since it's unfactorized -> factorized
      weights = self.input.weight
      padding = weights.new_zeros((weights.shape[0], new_feature_block.num_virtual_features))
      weights = torch.cat([weights, padding], dim=1)
      self.input.weight = nn.Parameter(weights)
      self.feature_set = new_feature_set
    else:
      raise Exception('Cannot change feature set from {} to {}.'.format(self.feature_set.name, new_feature_set.name))

  def forward(self, us, them, w_in, b_in):
    w = self.input(w_in)
    b = self.input(b_in)
    l0_ = (us * torch.cat([w, b], dim=1)) + (them * torch.cat([b, w], dim=1))
    # clamp here is used as a clipped relu to (0.0, 1.0)
    l0_ = torch.clamp(l0_, 0.0, 1.0)
    l1_ = torch.clamp(self.l1(l0_), 0.0, 1.0)
    l2_ = torch.clamp(self.l2(l1_), 0.0, 1.0)
    x = self.output(l2_)
    return x

  def step_(self, batch, batch_idx, loss_type):
    us, them, white, black, outcome, score = batch

    # 600 is the kPonanzaConstant scaling factor needed to convert the training net output to a score.
    # This needs to match the value used in the serializer
    nnue2score = 600
    scaling = 361

    q = self(us, them, white, black) * nnue2score / scaling
    t = outcome
    p = (score / scaling).sigmoid()

    epsilon = 1e-12
    teacher_entropy = -(p * (p + epsilon).log() + (1.0 - p) * (1.0 - p + epsilon).log())
    outcome_entropy = -(t * (t + epsilon).log() + (1.0 - t) * (1.0 - t + epsilon).log())
    teacher_loss = -(p * F.logsigmoid(q) + (1.0 - p) * F.logsigmoid(-q))
    outcome_loss = -(t * F.logsigmoid(q) + (1.0 - t) * F.logsigmoid(-q))
    result  = self.lambda_ * teacher_loss    + (1.0 - self.lambda_) * outcome_loss
    entropy = self.lambda_ * teacher_entropy + (1.0 - self.lambda_) * outcome_entropy
    loss = result.mean() - entropy.mean()
    self.log(loss_type, loss)
    return loss

    # MSE Loss function for debugging
    # Scale score by 600.0 to match the expected NNUE scaling factor
    # output = self(us, them, white, black) * 600.0
    # loss = F.mse_loss(output, score)

  def training_step(self, batch, batch_idx):
    return self.step_(batch, batch_idx, 'train_loss')

  def validation_step(self, batch, batch_idx):
    self.step_(batch, batch_idx, 'val_loss')

  def test_step(self, batch, batch_idx):
    self.step_(batch, batch_idx, 'test_loss')

  def configure_optimizers(self):
    # Train with a lower LR on the output layer
    LR = 1e-3
    train_params = [
      {'params': self.get_layers(lambda x: self.output != x), 'lr': LR},
      {'params': self.get_layers(lambda x: self.output == x), 'lr': LR / 10},
    ]
    # increasing the eps leads to less saturated nets with a few dead neurons
    optimizer = ranger.Ranger(train_params, betas=(.9, 0.999), eps=1.0e-7)
    # Drop learning rate after 75 epochs
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=75, gamma=0.3)
    return [optimizer], [scheduler]

  def get_layers(self, filt):
    """
    Returns a list of layers.
    filt: Return true to include the given layer.
    """
    for i in self.children():
      if filt(i):
        if isinstance(i, nn.Linear):
          for p in i.parameters():
            if p.requires_grad:
              yield p


# ---- train.py, shrunk: the default HalfKP^ feature set, random dense batches instead of the binpack loader ----
def random_batches(feature_set, n, batch_size=4):
  for _ in range(n):
    us = torch.randint(0, 2, (batch_size, 1)).float()
    them = 1.0 - us
    white = (torch.rand(batch_size, feature_set.num_features) < 0.001).float()
    black = (torch.rand(batch_size, feature_set.num_features) < 0.001).float()
    outcome = torch.randint(0, 3, (batch_size, 1)).float() / 2.0
    score = torch.randn(batch_size, 1) * 100
    yield us, them, white, black, outcome, score

def main():
  feature_set = get_feature_set_from_name('HalfKP^')

  nnue = NNUE(feature_set=feature_set, lambda_=1.0)

  print("Feature set: {}".format(feature_set.name))
  print("Num real features: {}".format(feature_set.num_real_features))
  print("Num virtual features: {}".format(feature_set.num_virtual_features))
  print("Num features: {}".format(feature_set.num_features))

  pl.seed_everything(42)
  trainer = pl.Trainer(max_epochs=1, max_steps=2)
  train = list(random_batches(feature_set, 2))
  trainer.fit(nnue, train)

if __name__ == '__main__':
  main()

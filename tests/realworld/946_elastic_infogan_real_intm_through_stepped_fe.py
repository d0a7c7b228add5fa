"""elastic-infogan infoGAN.train: the shared front end FE runs once on the real batch and its augmentation, D_loss is backwarded with retain_graph=True and D_optimizer (FE + D) steps, then G_loss adds the NT-Xent augmentation loss on Q(real_intm), Q(real_intm_aux) (the FE outputs computed before the step) and is backwarded through FE."""
# outcome: inplace-error
# source: https://github.com/WisconsinAIVision/elastic-infogan/issues/2
# repo: WisconsinAIVision/elastic-infogan
# category: trainer
# twin: 947_elastic_infogan_real_intm_through_stepped_fe_fixed.py
import argparse, os, tempfile
import torch, time, pickle, itertools
import numpy as np
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
import sys
from torch.autograd import Variable


# ---- utils.py (the parts used) ----
def print_network(net):
    num_params = 0
    for param in net.parameters():
        num_params += param.numel()
    print(net)
    print('Total number of parameters: %d' % num_params)

def save_images(images, size, image_path):
    pass  # imageio not installed here; no image files


def initialize_weights(net):
    for m in net.modules():
        if isinstance(m, nn.Conv2d):
            m.weight.data.normal_(0, 0.02)
            m.bias.data.zero_()
        elif isinstance(m, nn.ConvTranspose2d):
            m.weight.data.normal_(0, 0.02)
            m.bias.data.zero_()
        elif isinstance(m, nn.Linear):
            m.weight.data.normal_(0, 0.02)
            m.bias.data.zero_()


class utils:
    print_network = staticmethod(print_network)
    save_images = staticmethod(save_images)
    initialize_weights = staticmethod(initialize_weights)


# stand-ins for matplotlib (not installed) and the MNIST dataloader (no downloads): random 28x28
# images, their augmented views and labels
class plt:
    def __getattr__(self, name):
        return lambda *a, **k: None
plt = plt()


def dataloader(dataset, input_size, batch_size, exp_ind=0):
    data = [(torch.rand(batch_size, 1, input_size, input_size) * 2 - 1,
             torch.rand(batch_size, 1, input_size, input_size) * 2 - 1,
             torch.randint(0, 10, (batch_size,))) for _ in range(2)]

    class _Loader(list):
        pass
    loader = _Loader(data)
    loader.dataset = [None] * (2 * batch_size)
    return loader


# ---- nt_xent.py ----
class NTXentLoss(torch.nn.Module):

    def __init__(self, device, batch_size, temperature, use_cosine_similarity):
        super(NTXentLoss, self).__init__()
        self.batch_size = batch_size
        self.temperature = temperature
        self.device = device
        self.softmax = torch.nn.Softmax(dim=-1)
        self.mask_samples_from_same_repr = self._get_correlated_mask().type(torch.bool)
        self.similarity_function = self._get_similarity_function(use_cosine_similarity)
        self.criterion = torch.nn.CrossEntropyLoss(reduction="sum")

    def _get_similarity_function(self, use_cosine_similarity):
        if use_cosine_similarity:
            self._cosine_similarity = torch.nn.CosineSimilarity(dim=-1)
            return self._cosine_simililarity
        else:
            return self._dot_simililarity

    def _get_correlated_mask(self):
        diag = np.eye(2 * self.batch_size)
        l1 = np.eye((2 * self.batch_size), 2 * self.batch_size, k=-self.batch_size)
        l2 = np.eye((2 * self.batch_size), 2 * self.batch_size, k=self.batch_size)
        mask = torch.from_numpy((diag + l1 + l2))
        mask = (1 - mask).type(torch.bool)
        return mask.to(self.device)

    @staticmethod
    def _dot_simililarity(x, y):
        v = torch.tensordot(x.unsqueeze(1), y.T.unsqueeze(0), dims=2)
        # x shape: (N, 1, C)
        # y shape: (1, C, 2N)
        # v shape: (N, 2N)
        return v

    def _cosine_simililarity(self, x, y):
        # x shape: (N, 1, C)
        # y shape: (1, 2N, C)
        # v shape: (N, 2N)
        #print('enter')
        #print(x.shape)
        #print(y.shape)
        v = self._cosine_similarity(x.unsqueeze(1), y.unsqueeze(0))
        #print(v.shape)
        return v

    def forward(self, zis, zjs):
        representations = torch.cat([zjs, zis], dim=0)

        similarity_matrix = self.similarity_function(representations, representations)
        #print(similarity_matrix.shape)
        # filter out the scores from the positive samples
        l_pos = torch.diag(similarity_matrix, self.batch_size)
        r_pos = torch.diag(similarity_matrix, -self.batch_size)
        #print(l_pos.shape)
        #print(r_pos.shape)
        positives = torch.cat([l_pos, r_pos]).view(2 * self.batch_size, 1)
        #print(positives.shape)

        negatives = similarity_matrix[self.mask_samples_from_same_repr].view(2 * self.batch_size, -1)

        logits = torch.cat((positives, negatives), dim=1)
        logits /= self.temperature

        labels = torch.zeros(2 * self.batch_size).to(self.device).long()
        #print(labels.shape)
        #print(logits.shape)
        loss = self.criterion(logits, labels)

        return loss / (2 * self.batch_size)


# ---- infoGAN.py ----
class HLoss(nn.Module):
    def __init__(self):
        super(HLoss, self).__init__()

    def forward(self, x):
        b = F.softmax(x) * F.log_softmax(x)
        b = -1 * b.sum(dim = 1)
        return b.mean()

class Generator(nn.Module):

    def __init__(self, input_dim=100, output_dim=1, input_size=32, len_discrete_code=10):
        super(Generator, self).__init__()
        self.input_dim = input_dim
        self.output_dim = output_dim
        self.input_size = input_size
        self.len_discrete_code = len_discrete_code  # categorical distribution (i.e. label)

        self.fc = nn.Sequential(
            nn.Linear(self.input_dim + self.len_discrete_code, 1024),
            nn.BatchNorm1d(1024),
            nn.ReLU(),
            nn.Linear(1024, 128 * (self.input_size // 4) * (self.input_size // 4)),
            nn.BatchNorm1d(128 * (self.input_size // 4) * (self.input_size // 4)),
            nn.ReLU(),
        )
        self.deconv = nn.Sequential(
            nn.ConvTranspose2d(128, 64, 4, 2, 1),
            nn.BatchNorm2d(64),
            nn.ReLU(),
            nn.ConvTranspose2d(64, self.output_dim, 4, 2, 1),
            nn.Tanh(),
        )
        utils.initialize_weights(self)

    def forward(self, z, dist_code):
        x = torch.cat([z, dist_code], 1)
        x = self.fc(x)
        x = x.view(-1, 128, (self.input_size // 4), (self.input_size // 4))
        x = self.deconv(x)

        return x

class Front_end(nn.Module):

    def __init__(self, input_dim=1, input_size=32):
        super(Front_end, self).__init__()
        self.input_dim = input_dim
        self.input_size = input_size

        self.conv = nn.Sequential(
            nn.Conv2d(self.input_dim, 64, 4, 2, 1),
            nn.LeakyReLU(0.2),
            nn.Conv2d(64, 128, 4, 2, 1),
            nn.BatchNorm2d(128),
            nn.LeakyReLU(0.2),
        )
        self.fc = nn.Sequential(
            nn.Linear(128 * (self.input_size // 4) * (self.input_size // 4), 1024),
            nn.BatchNorm1d(1024),
            nn.LeakyReLU(0.2)
        )
        utils.initialize_weights(self)

    def forward(self, input):
        x = self.conv(input)
        x = x.view(-1, 128 * (self.input_size // 4) * (self.input_size // 4))
        a = self.fc(x)  # saved-by
        return a


class Discriminator(nn.Module):
    # Module which predicts real/fake for the image
    def __init__(self, output_dim=1):
        super(Discriminator, self).__init__()
        self.output_dim = output_dim
        
        self.fc = nn.Sequential(
            nn.Linear(1024, self.output_dim),
            nn.Sigmoid()
        )
        utils.initialize_weights(self)

    def forward(self, input):

        x = self.fc(input)
        return x


class Latent_predictor(nn.Module):
    # Module which reconstructs the latent codes from the fake images
    def __init__(self, len_discrete_code = 10):
        super(Latent_predictor, self).__init__()

        self.len_discrete_code = len_discrete_code  # categorical distribution (i.e. label)

        self.fc = nn.Sequential(
            nn.Linear(1024, 128),
            nn.BatchNorm1d(128),
            nn.LeakyReLU(0.2),
            #nn.Linear(128, self.len_discrete_code)
        )
        self.fc1 =nn.Linear(128, self.len_discrete_code)
        utils.initialize_weights(self)

    def forward(self, input):

        a = self.fc(input)
        b = self.fc1(a)
        return a,b


class infoGAN(object):
    def __init__(self, args):
        # parameters
        self.epoch = args.epoch
        self.mytemp = args.mytemp
        self.klwt = args.klwt
        self.batch_size = args.batch_size
        self.save_dir = args.save_dir
        self.result_dir = args.result_dir
        self.dataset = args.dataset
        self.log_dir = args.log_dir
        self.gpu_mode = args.gpu_mode
        self.model_name = args.gan_type
        self.input_size = args.input_size
        self.save_ind = args.ind
        self.z_dim = 62
        self.len_discrete_code = 10   # categorical distribution (i.e. label)
        self.exp_id = args.ind - 1
        self.sample_num = 100 
        temp = torch.tensor(self.len_discrete_code * [float(1)/ self.len_discrete_code])  
        self.prior_parameters = Variable(temp, requires_grad = True)
        self.repeat_checks = 100
        # self.mnist_net (the pretrained MNIST classifier from mnist_cnn.pth) is not used in training
        # load dataset
        self.data_loader = dataloader(self.dataset, self.input_size, self.batch_size, exp_ind=self.exp_id)
        print ("Length of dataloader", len(self.data_loader))
        data = self.data_loader.__iter__().__next__()[0]

        # networks init
        self.G = Generator(input_dim = self.z_dim, output_dim = data.shape[1], input_size = self.input_size, len_discrete_code = self.len_discrete_code)
        self.FE = Front_end(input_dim = data.shape[1], input_size = self.input_size)
        self.D = Discriminator(output_dim=1)
        self.Q = Latent_predictor(len_discrete_code = self.len_discrete_code)

        self.G_optimizer = optim.Adam([{'params':self.G.parameters()}, {'params':self.Q.parameters()}, {'params':self.prior_parameters}], lr=args.lrG, betas=(args.beta1, args.beta2))
        self.D_optimizer = optim.Adam([{'params':self.FE.parameters()}, {'params':self.D.parameters()}], lr=args.lrD, betas=(args.beta1, args.beta2))
        self.nt_xent_criterion = NTXentLoss('cpu', self.batch_size, self.mytemp, True)
        
        if self.gpu_mode:
            self.G
            self.D
            self.FE
            self.Q
            self.BCE_loss = nn.BCELoss()
            self.CE_loss = nn.CrossEntropyLoss()
            self.MSE_loss = nn.MSELoss()
            self.entropy_loss = HLoss()
        else:
            ghj = 1 

        print('---------- Networks architecture -------------')
        utils.print_network(self.G)
        utils.print_network(self.D)
        print('-----------------------------------------------')

        # Fixed noise
        self.sample_z_ = torch.randn((self.sample_num, self.z_dim))
        temp = torch.zeros((self.len_discrete_code, 1))
        for i in range(self.len_discrete_code):
            temp[i, 0] = i

        temp_y = torch.zeros((self.sample_num, 1))
        for i in range(self.sample_num):
                temp_y[i] = temp_y[i] + (i / (self.sample_num/self.len_discrete_code)) 
        
        self.sample_y_ = torch.zeros((self.sample_num, self.len_discrete_code)).scatter_(1, temp_y.type(torch.LongTensor), 1)

        if self.gpu_mode:
            self.sample_z_, self.sample_y_ = \
                self.sample_z_, self.sample_y_
                

    def sample_gumbel(self, shape, eps = 1e-20):

	    u = torch.FloatTensor(shape, self.len_discrete_code).uniform_(0, 1)
	    return -torch.log(-torch.log(u + eps) + eps)

    def gumbel_softmax_sample(self, logits, temp, batch_size):

	    y = logits + self.sample_gumbel(batch_size)
	    return torch.nn.functional.softmax( y / temp)

    def approx_latent(self, params):

	    params = F.softmax(params)
	    log_params = torch.log(params)
	    c = self.gumbel_softmax_sample(log_params, temp = 0.1, batch_size = self.batch_size) 
	    return c



    def train(self):
        self.train_hist = {}
        self.train_hist['D_loss'] = []
        self.train_hist['G_loss'] = []
        self.train_hist['info_loss'] = []
        self.train_hist['per_epoch_time'] = []
        self.train_hist['total_time'] = []
        self.prior_denominator = 3 
        self.y_real_, self.y_fake_ = torch.ones(self.batch_size, 1, device = "cpu"), torch.zeros(self.batch_size, 1, device = "cpu")
        self.D.train()
        print('training start!!')
        start_time = time.time()
        for epoch in range(self.epoch):
            self.G.train()
            epoch_start_time = time.time()
            for iter, (x_, xa_, y_) in enumerate(self.data_loader):

                if iter == self.data_loader.dataset.__len__() // self.batch_size:
                    break
                z_ = torch.randn((self.batch_size, self.z_dim), device = "cpu")

                y_disc_= self.approx_latent(self.prior_parameters)

                if self.gpu_mode:
                    x_  = x_
                    xa_ = xa_
                # update D network
                self.D_optimizer.zero_grad()

                # real part
                real_intm = self.FE(x_)
                real_intm_aux = self.FE(xa_)
                real_logits = self.D(real_intm)
                D_real_loss = self.BCE_loss(real_logits, self.y_real_)

                # fake part
                fx = self.G(z_, y_disc_) 
                fake_intm_tmp = self.FE(fx.detach())
                fake_logits_tmp = self.D(fake_intm_tmp)
                D_fake_loss = self.BCE_loss(fake_logits_tmp, self.y_fake_)
                D_loss = D_real_loss + D_fake_loss

                D_loss.backward(retain_graph=True)
                self.D_optimizer.step()  # error: IPL007

                # update G network
                self.G_optimizer.zero_grad()

                fake_intm = self.FE(fx)
                fake_logits = self.D(fake_intm)
                G_fake_loss = self.BCE_loss(fake_logits, self.y_real_)

                # information loss
                _,c_pred = self.Q(fake_intm)
                info_loss = self.CE_loss(c_pred, torch.max(y_disc_, 1)[1])

                
                # Augmentation similarity loss 
                real_c_pred,_ = self.Q(real_intm)
                real_aux_c_pred,_ = self.Q(real_intm_aux)
                real_c_pred = F.normalize(real_c_pred,dim=1)
                real_aux_c_pred = F.normalize(real_aux_c_pred,dim=1)
                kl_loss = self.nt_xent_criterion(real_c_pred, real_aux_c_pred)

                 
                G_loss = G_fake_loss + info_loss + self.klwt*kl_loss 
                G_loss.backward(retain_graph=True)
                self.G_optimizer.step()

                if ((iter + 1) % 100) == 0:
                    print("Epoch: [%2d] [%4d/%4d] D_loss: %.8f, G_loss: %.8f, Info_loss: %.8f, KL_loss: %.8f" %
                          ((epoch + 1), (iter + 1), self.data_loader.dataset.__len__() // self.batch_size, D_loss.item(), G_fake_loss.item(), info_loss.item(), kl_loss.item()))

            self.train_hist['per_epoch_time'].append(time.time() - epoch_start_time)
            with torch.no_grad():
                self.visualize_results((epoch+1))
            if epoch % 10 == 0:

                if not os.path.exists('./saved_models'):
                    os.makedirs('./saved_models')

                torch.save(self.G.state_dict(), os.path.join('./saved_models', 'netG%d.pth' %(self.exp_id)))
                torch.save(self.D.state_dict(), os.path.join('./saved_models', 'netD%d.pth' %(self.exp_id)))
                torch.save(self.FE.state_dict(), os.path.join('./saved_models', 'netFE%d.pth' %(self.exp_id)))
                torch.save(self.Q.state_dict(), os.path.join('./saved_models', 'netQ%d.pth' %(self.exp_id)))


        self.train_hist['total_time'].append(time.time() - start_time)
        print("Avg one epoch time: %.2f, total %d epochs time: %.2f" % (np.mean(self.train_hist['per_epoch_time']),
                                                                        self.epoch, self.train_hist['total_time'][0]))
        print("Training finish!... save training results")

        self.save()

        self.loss_plot(self.train_hist, os.path.join(self.save_dir, self.dataset, self.model_name), self.model_name)

    def visualize_results(self, epoch):
        self.G.eval()

        if not os.path.exists(self.result_dir + '/' + self.dataset + '/' + self.model_name):
            os.makedirs(self.result_dir + '/' + self.dataset + '/' + self.model_name)

        image_frame_dim = int(np.floor(np.sqrt(self.sample_num)))

        """ style by class """
        samples = self.G(self.sample_z_, self.sample_y_)
        if self.gpu_mode:
            samples = samples.cpu().data.numpy().transpose(0, 2, 3, 1)
        else:
            samples = samples.data.numpy().transpose(0, 2, 3, 1)

        samples = (samples + 1) / 2

        utils.save_images(samples[:image_frame_dim * image_frame_dim, :, :, :], [image_frame_dim, image_frame_dim],
                          self.result_dir + '/disc_interpolation%d.png' %(self.save_ind))


    def save(self):
        save_dir = os.path.join(self.save_dir, self.dataset, self.model_name)

        if not os.path.exists(save_dir):
            os.makedirs(save_dir)

        torch.save(self.G.state_dict(), os.path.join(save_dir, self.model_name + '_G.pkl'))
        torch.save(self.D.state_dict(), os.path.join(save_dir, self.model_name + '_D.pkl'))

        with open(os.path.join(save_dir, self.model_name + '_history.pkl'), 'wb') as f:
            pickle.dump(self.train_hist, f)

    def load(self):
        save_dir = os.path.join(self.save_dir, self.dataset, self.model_name)

        self.G.load_state_dict(torch.load(os.path.join(save_dir, self.model_name + '_G.pkl')))
        self.D.load_state_dict(torch.load(os.path.join(save_dir, self.model_name + '_D.pkl')))

    def loss_plot(self, hist, path='Train_hist.png', model_name=''):
        x = range(len(hist['D_loss']))

        y1 = hist['D_loss']
        y2 = hist['G_loss']
        y3 = hist['info_loss']

        plt.plot(x, y1, label='D_loss')
        plt.plot(x, y2, label='G_loss')
        plt.plot(x, y3, label='info_loss')

        plt.xlabel('Iter')
        plt.ylabel('Loss')

        plt.legend(loc=4)
        plt.grid(True)
        plt.tight_layout()

        path = os.path.join(path, model_name + '_loss.png')

        plt.savefig(path)


# ---- main.py ----
"""parsing and configuration"""
def parse_args():
    desc = "Pytorch implementation of GAN collections"
    parser = argparse.ArgumentParser(description=desc)

    parser.add_argument('--gan_type', type=str, default='infoGAN',
                        choices=['GAN', 'CGAN', 'infoGAN', 'ACGAN', 'EBGAN', 'BEGAN', 'WGAN', 'WGAN_GP', 'DRAGAN', 'LSGAN'],
                        help='The type of GAN')
    parser.add_argument('--dataset', type=str, default='mnist', choices=['mnist', 'fashion-mnist', 'cifar10', 'cifar100', 'svhn', 'stl10', 'lsun-bed'],
                        help='The name of dataset')
    parser.add_argument('--split', type=str, default='', help='The split flag for svhn and stl10')
    parser.add_argument('--epoch', type=int, default=200, help='The number of epochs to run')
    parser.add_argument('--batch_size', type=int, default=64, help='The size of batch')
    parser.add_argument('--ind', type=int, help='Experiment index')
    parser.add_argument('--input_size', type=int, default=28, help='The size of input image')
    parser.add_argument('--save_dir', type=str, default='models',
                        help='Directory name to save the model')
    parser.add_argument('--result_dir', type=str, default='results', help='Directory name to save the generated images')
    parser.add_argument('--log_dir', type=str, default='logs', help='Directory name to save training logs')
    parser.add_argument('--lrG', type=float, default=0.0002)
    parser.add_argument('--mytemp', type=float, default=0.5)
    parser.add_argument('--klwt', type=float, default=10.0)
    parser.add_argument('--lrD', type=float, default=0.0002)
    parser.add_argument('--beta1', type=float, default=0.5)
    parser.add_argument('--beta2', type=float, default=0.999)
    parser.add_argument('--gpu_mode', type=bool, default=True)
    parser.add_argument('--benchmark_mode', type=bool, default=True)


    return check_args(parser.parse_args(['--ind', '1', '--epoch', '1', '--batch_size', '8']))

"""checking arguments"""
def check_args(args):
    # --save_dir
    if not os.path.exists(args.save_dir):
        os.makedirs(args.save_dir)

    # --result_dir
    if not os.path.exists(args.result_dir):
        os.makedirs(args.result_dir)

    # --result_dir
    if not os.path.exists(args.log_dir):
        os.makedirs(args.log_dir)

    # --epoch
    try:
        assert args.epoch >= 1
    except:
        print('number of epochs must be larger than or equal to one')

    # --batch_size
    try:
        assert args.batch_size >= 1
    except:
        print('batch size must be larger than or equal to one')

    return args

"""main"""
def main():
    # parse arguments
    os.chdir(tempfile.mkdtemp())  # models/, results/, logs/ and saved_models/ go to a temporary folder
    args = parse_args()
    if args is None:
        exit()
    print(args)
    if args.benchmark_mode:
        torch.backends.cudnn.benchmark = True

        # declare instance for GAN


    gan = infoGAN(args)


        # launch the graph in a session
    gan.train()
    print(" [*] Training finished!")

    # visualize learned generator
    gan.visualize_results(args.epoch)
    print(" [*] Testing finished!")

if __name__ == '__main__':
    main()

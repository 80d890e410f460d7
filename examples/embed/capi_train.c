/* examples/embed/capi_train.c — netcl from C alone, no Lua: fits a linear
 * model y = x w to targets made by a known w, with autograd (mse loss,
 * backward) and the fused SGD step, on the default device (NETCL_DEVICE
 * picks another). Prints the loss before and after and the largest error
 * of the learned weights; exits 1 if any call fails or it did not learn.
 *   gcc -std=c11 -Isrc examples/embed/capi_train.c -Lbuild -lnetcl -Wl,-rpath,$PWD/build -o capi_train */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "netcl.h"

/* any failing call: print the library's message and stop */
#define CHECK(call)                                                            \
    do {                                                                       \
        if ((call) != NETCL_OK) {                                              \
            fprintf(stderr, "%s failed: %s\n", #call, netcl_last_error());     \
            exit(1);                                                           \
        }                                                                      \
    } while (0)

static double scalar(netcl_tensor *t)
{
    double v = 0;
    CHECK(netcl_tensor_to_doubles(t, &v, 1));
    return v;
}

int main(void)
{
    netcl_device *dev;
    CHECK(netcl_device_default(&dev));
    netcl_rng_seed(42);
    int64_t xs[2] = { 256, 4 }, ws[2] = { 4, 1 };
    double truth[4] = { 1.5, -2.0, 0.5, 3.0 };
    netcl_tensor *x, *w_true, *y, *w;
    CHECK(netcl_tensor_rand(&x, dev, NETCL_DTYPE_FLOAT32, 2, xs, NETCL_RNG_NORMAL, 0, 1));
    CHECK(netcl_tensor_from_doubles(&w_true, dev, NETCL_DTYPE_FLOAT32, 2, ws, truth));
    CHECK(netcl_matmul(&y, x, w_true));
    CHECK(netcl_tensor_full(&w, dev, NETCL_DTYPE_FLOAT32, 2, ws, 0));
    CHECK(netcl_tensor_set_requires_grad(w, 1));
    double hyper[NETCL_OPTIM_NHYPER] = { 0 };
    hyper[NETCL_OPTIM_LR] = 0.1;
    hyper[NETCL_OPTIM_PARAM_SCALE] = 1;
    double first = 0, last = 0;
    for (int step = 0; step < 100; step++) {
        netcl_tensor *pred, *loss;
        CHECK(netcl_tensor_set_grad(w, NULL));
        CHECK(netcl_matmul(&pred, x, w));
        CHECK(netcl_mse_loss(&loss, pred, y, NETCL_REDUCTION_MEAN));
        CHECK(netcl_backward(loss, NULL, 0));
        last = scalar(loss);
        if (step == 0) first = last;
        /* the optimizer step writes w in place, outside the graph */
        netcl_set_grad_enabled(0);
        CHECK(netcl_optim_step(NETCL_OPTIM_SGD, 0, w, netcl_tensor_grad(w), NULL, NULL, NULL, hyper, NETCL_OPTIM_NHYPER));
        netcl_set_grad_enabled(1);
        netcl_tensor_release(pred);
        netcl_tensor_release(loss);
    }
    double learned[4], err = 0;
    CHECK(netcl_tensor_to_doubles(w, learned, 4));
    for (int i = 0; i < 4; i++) err = fmax(err, fabs(learned[i] - truth[i]));
    printf("loss %.6f -> %.6f, largest weight error %.2e\n", first, last, err);
    netcl_tensor_release(x);
    netcl_tensor_release(w_true);
    netcl_tensor_release(y);
    netcl_tensor_release(w);
    return (last < 1e-3 * first && err < 1e-2) ? 0 : 1;
}

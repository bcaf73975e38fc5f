/*===- Module.c - shared libraries of layers, opened at run time ----------===*
 *
 * Part of mhac.
 *
 *===----------------------------------------------------------------------===*/

#include "mhac/runtime.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct mhac_module {
  void *handle;
  const mhac_layer *const *layers;
  int32_t numLayers;
};

static void report(char *error, size_t size, const char *path, const char *message) {
  if (error && size > 0)
    snprintf(error, size, "%s: %s", path, message);
}

/* Whether `path` is an ELF relocatable object (NAME.o), which dlopen refuses with a loader's
 * message that does not say what to do. */
static int isRelocatableObject(const char *path) {
  unsigned char header[18];
  FILE *file = fopen(path, "rb");
  if (!file)
    return 0;
  size_t read = fread(header, 1, sizeof header, file);
  fclose(file);
  /* e_type (offset 16, little-endian on x86-64) is ET_REL = 1. */
  return read == sizeof header && memcmp(header, "\x7f" "ELF", 4) == 0 && header[16] == 1 &&
         header[17] == 0;
}

mhac_module *mhac_module_open(const char *path, char *error, size_t error_size) {
  if (!path) {
    report(error, error_size, "(null)", "no path given");
    return NULL;
  }
  /* `path` names a file: without a slash, dlopen would search the library path instead. */
  char local[4096];
  const char *file = path;
  if (!strchr(path, '/')) {
    if (snprintf(local, sizeof local, "./%s", path) >= (int)sizeof local) {
      report(error, error_size, path, "path too long");
      return NULL;
    }
    file = local;
  }
  /* RTLD_LOCAL: every module defines mhac_module_layers; each must find its own. */
  void *handle = dlopen(file, RTLD_NOW | RTLD_LOCAL);
  if (!handle && isRelocatableObject(file)) {
    report(error, error_size, path,
           "an object file, not a module: compile the layers with 'mhac compile --shared' to "
           "get a NAME.so that can be loaded (NAME.o is for linking into a program)");
    return NULL;
  }
  if (!handle) {
    /* dlerror() repeats the path; keep only its reason. */
    const char *reason = dlerror();
    const char *colon = reason ? strstr(reason, ": ") : NULL;
    report(error, error_size, path, colon ? colon + 2 : reason ? reason : "cannot be opened");
    return NULL;
  }
  typedef const mhac_layer *const *(*layers_fn)(void);
  layers_fn list = (layers_fn)dlsym(handle, "mhac_module_layers");
  if (!list) {
    report(error, error_size, path, "not a module written by mhac (no mhac_module_layers)");
    dlclose(handle);
    return NULL;
  }
  mhac_module *module = (mhac_module *)calloc(1, sizeof(mhac_module));
  if (!module) {
    report(error, error_size, path, "out of memory");
    dlclose(handle);
    return NULL;
  }
  module->handle = handle;
  module->layers = list();
  while (module->layers && module->layers[module->numLayers])
    ++module->numLayers;
  for (int32_t i = 0; i < module->numLayers; ++i) {
    if (module->layers[i]->abi_version != MHAC_ABI_VERSION) {
      report(error, error_size, path, "compiled for another version of the mhac ABI");
      mhac_module_close(module);
      return NULL;
    }
    const char *missing = mhac_layer_missing_cpu_feature(module->layers[i]);
    if (missing) {
      char message[160];
      snprintf(message, sizeof message,
               "compiled for a CPU with %s, which this one lacks (compile it here with "
               "--target host)",
               missing);
      report(error, error_size, path, message);
      mhac_module_close(module);
      return NULL;
    }
  }
  return module;
}

void mhac_module_close(mhac_module *module) {
  if (!module)
    return;
  dlclose(module->handle);
  free(module);
}

int32_t mhac_module_num_layers(const mhac_module *module) { return module ? module->numLayers : 0; }

const mhac_layer *mhac_module_layer(const mhac_module *module, int32_t index) {
  if (!module || index < 0 || index >= module->numLayers)
    return NULL;
  return module->layers[index];
}

const mhac_layer *mhac_module_find_layer(const mhac_module *module, const char *name) {
  if (!module || !name)
    return NULL;
  for (int32_t i = 0; i < module->numLayers; ++i)
    if (strcmp(module->layers[i]->name, name) == 0)
      return module->layers[i];
  return NULL;
}

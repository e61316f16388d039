/*
 * libgexec: the client library of the gexec tensor graph runtime.
 * Include this one header; see each part for a usage example:
 *   status.h  status codes      tensor.h  tensors and dtypes
 *   graph.h   graph builder     io.h      .npy and YAML graph files
 *   client.h  talking to gexecd
 * Link with `pkg-config --libs gexec`.
 */
#ifndef GEXEC_GEXEC_H
#define GEXEC_GEXEC_H

#include <gexec/status.h>
#include <gexec/tensor.h>
#include <gexec/graph.h>
#include <gexec/io.h>
#include <gexec/client.h>

#endif

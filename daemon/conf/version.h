/* The version of nddd, reported by `nddd --version` and in stats. */
#ifndef NDDD_VERSION_H
#define NDDD_VERSION_H

#define NDDD_VERSION "0.5.0"

#endif

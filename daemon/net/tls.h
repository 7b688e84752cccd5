/*
 * tls: the OpenSSL context of the TLS listener ([tls] listen), built from
 * the [tls] keys: TLS 1.2 or later, the server's certificate chain and
 * key, and, with [tls] client_ca, client certificates required and
 * verified against those CAs.  With [tls] client_cn, a client certificate
 * must also name one of the listed clients: the common name of its
 * subject, exactly (one CN, not several).  A refused certificate fails the
 * handshake (a bad_certificate alert; TLS 1.3 clients learn it at their
 * first read) and the log names its subject and the client's address.
 * Clients may resume their sessions (TLS 1.3 tickets, TLS 1.2 session ids
 * and tickets), with client certificates as without: the certificate
 * checked by the full handshake stands.
 *
 * The server (server.c) makes one context at start-up and an SSL from it
 * per accepted connection; libevent's bufferevent_openssl drives the
 * handshakes.
 *
 * Threads: the loop thread.
 */
#ifndef NDDD_TLS_H
#define NDDD_TLS_H

#include <openssl/ssl.h>

struct config;

/*
 * The context for cfg's [tls] keys (cert and key must be set; client_cn
 * valid, as config_validate checks).  cfg must outlive the context: its
 * client_cn is read at each handshake.  Returns NULL with *cause (caller
 * frees; NULL if out of memory) when the certificate, the key or the
 * client CAs cannot be loaded.  Free with SSL_CTX_free.
 */
SSL_CTX *tls_context_new(const struct config *cfg, char **cause);

#endif

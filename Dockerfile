# nanlog-bpf container image (docs/kubernetes.md). x86-64 only, like the build.
#
#   make image      podman, from a local Debian 12 base: no registry
#   docker build -t registry.example.com/nanlog-bpf:0.1.0 --build-arg BASE=debian:bookworm .
#
# The build stage runs the build steps CI runs, through the same script
# (scripts/ci-build.sh), and the unit tests; the end-to-end tests need root,
# BPF and uprobes, which an image build does not have, so only CI runs them.
# The runtime stage is the tool and its shared libraries on the same base.
# This file is checked by tests/e2e/test_deploy.sh; CI builds the image
# (make image) and tests/e2e/test_image.sh and test_kube_play.sh run it.

# The base of both stages: a Debian 12 image. The default is the one `make
# image` makes with mmdebstrap (minbase) and imports (scripts/image.sh), so
# no registry is needed; with one, pass --build-arg BASE=debian:bookworm.
ARG BASE=localhost/nanlog-bpf-base:bookworm
FROM ${BASE} AS build
WORKDIR /src
# the dependencies in a layer of their own: rebuilt only when the package
# list or the build script changes
COPY Makefile ./
COPY scripts/ci-build.sh scripts/deps.sh scripts/
RUN ./scripts/ci-build.sh deps
COPY . .
RUN ./scripts/ci-build.sh build unit

# The package stage builds the Debian package from the build stage's tree
# with CI's own step (make deb, docs/packaging.md). That tree has no .git:
# hand the version in, so that the image's is the tree's (make image does):
#   --build-arg NANLOG_VERSION=$(scripts/version.sh)
# (without it, the VERSION file's).
FROM build AS package
ARG NANLOG_VERSION
RUN ./scripts/ci-build.sh deb

FROM ${BASE}
# the package, installed with apt, which also installs the libraries it
# depends on (its Depends, from the binary: ${shlibs:Depends}); its systemd
# unit and logrotate snippet are inert in a container
COPY --from=package /src/build/deb/ /tmp/deb/
RUN apt-get update \
	&& DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends /tmp/deb/nanlog-bpf_*_amd64.deb \
	&& rm -rf /var/lib/apt/lists/* /tmp/deb
# Root with the capabilities the pod grants (deploy/kubernetes/*.yaml: BPF,
# PERFMON, SYS_PTRACE and nothing else); the tool drops what it does not
# keep after attaching and sets no_new_privs.
USER 0:0
ENTRYPOINT ["/usr/sbin/nanlog-bpf"]
CMD ["--help"]

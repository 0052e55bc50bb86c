# nodeconfd's release image: the static binary on an empty base. `make image`
# builds the same image without a container engine (hack/buildimage, which a
# test holds to this file); docs/image.md says what is in it and why.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -buildvcs=false -ldflags="-s -buildid= -X main.version=$(cat VERSION)" -o /out/nodeconfd ./cmd/nodeconfd

FROM scratch
COPY hack/buildimage/rootfs/ /
COPY --from=build /out/nodeconfd /usr/bin/nodeconfd
USER 0
WORKDIR /
ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
ENTRYPOINT ["/usr/bin/nodeconfd"]
CMD ["start", "--root-mount=/rootfs"]

# nodeconfd: a static binary on a small base image.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags=-s -o /out/nodeconfd ./cmd/nodeconfd

FROM gcr.io/distroless/static-debian12
COPY --from=build /out/nodeconfd /usr/bin/nodeconfd
ENTRYPOINT ["/usr/bin/nodeconfd"]
CMD ["start", "--root-mount=/rootfs"]

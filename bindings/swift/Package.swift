// swift-tools-version:6.0
// KelpieBrowserGateway: the Swift binding over the C ABI (libkelpie_browser_gateway, CONTRACT.md §10).
// Build and test on Linux through the project's Debian 13 environment: `tools/dev swift test --package-path
// bindings/swift` (docs/swift.md). The C library is found through pkg-config (`kelpie-browser-gateway`).
import PackageDescription

let package = Package(
    name: "KelpieBrowserGateway",
    platforms: [.macOS(.v13), .iOS(.v16)],
    products: [
        .library(name: "KelpieBrowserGateway", targets: ["KelpieBrowserGateway"]),
    ],
    targets: [
        .systemLibrary(
            name: "CKelpieBrowserGateway",
            pkgConfig: "kelpie-browser-gateway",
            providers: []
        ),
        .target(
            name: "KelpieBrowserGateway",
            dependencies: ["CKelpieBrowserGateway"],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .executableTarget(
            name: "kelpie-swift-bench",
            dependencies: ["KelpieBrowserGateway", "CKelpieBrowserGateway"],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .testTarget(
            name: "KelpieBrowserGatewayTests",
            dependencies: ["KelpieBrowserGateway", "CKelpieBrowserGateway"],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
    ]
)

# frozen_string_literal: true

require "open3"
require "openssl"

# What the specs of Vertex AI's and Bedrock's ambient credentials share: a service account
# key file pointed at a FakeProvider's token endpoint, and a run of
# spec/support/cloud_credentials_runner.rb in a process of its own (where aws-sdk-core or
# googleauth may be loaded without this process loading them).
module CloudCredentials
  RUNNER = File.expand_path("cloud_credentials_runner.rb", __dir__)
  EMAIL = "llm-failover@spec-project.iam.gserviceaccount.com"
  # RSA keys take a moment to make: one per name for the whole run.
  KEYS = {}

  module_function

  # @return [OpenSSL::PKey::RSA]
  def rsa(name = :sa)
    KEYS[name] ||= OpenSSL::PKey::RSA.new(2048)
  end

  # A service account key file as Google makes them, its token_uri +fp+'s.
  # @return [String] its path
  def service_account_file(fp, dir:, key: rsa, name: "sa.json", type: "service_account")
    path = File.join(dir, name)
    File.write(path, JSON.generate("type" => type, "project_id" => "spec-project", "private_key_id" => "0123abcd",
                                   "private_key" => key.to_pem, "client_email" => EMAIL,
                                   "token_uri" => fp.token_url))
    path
  end

  # Runs +plan+ apart, with none of the machine's cloud credentials but +env+.
  # @return [Array(Array<Hash>, String)] its JSON lines (the last: #inspect and the credential
  #   gems loaded) and its whole output
  def run_apart(dir:, env: {}, **plan)
    file = File.join(dir, "plan.json")
    File.write(file, JSON.generate(plan))
    clean = %w[AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_SESSION_TOKEN AWS_PROFILE AWS_REGION
               AWS_CONFIG_FILE AWS_SHARED_CREDENTIALS_FILE GOOGLE_APPLICATION_CREDENTIALS].to_h { |k| [k, nil] }
    out, status = Open3.capture2e(clean.merge("HOME" => dir, "AWS_EC2_METADATA_DISABLED" => "true").merge(env),
                                  RbConfig.ruby, RUNNER, file)
    lines = out.lines.grep(/\A\{/).map { |l| JSON.parse(l) }
    raise "the runner failed:\n#{out}" unless status.success? && lines.last&.key?("loaded")

    [lines, out]
  end
end

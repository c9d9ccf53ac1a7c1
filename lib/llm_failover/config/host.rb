# frozen_string_literal: true

require "uri"

require_relative "../errors"
require "llm_failover/llm_failover" # Host's routes (host_class.c)

module LlmFailover
  # Where one configured provider lives and how it is spoken to: its base_url (a default
  # per api), the host's layout (Azure's paths, Vertex AI's routes by publisher), the
  # protocol each model is asked in, and the credential the host takes. Checked once,
  # when the provider is configured, so that a call never finds out. The routes
  # themselves are the core's (lf_wire_route.c, through host_class.c): asked, never
  # copied.
  #
  # @api private: ProviderConfig's
  class Host
    APIS = %i[openai anthropic responses azure bedrock gemini vertex].freeze

    # Where each api lives when no base_url is given (Azure has none: every resource
    # has its own; Vertex AI's is its location's, asked of the core; Bedrock's its
    # region's, BEDROCK_BASE_URL).
    DEFAULT_BASE_URLS = {
      openai: "https://api.openai.com/v1",
      anthropic: "https://api.anthropic.com",
      responses: "https://api.openai.com/v1",
      gemini: "https://generativelanguage.googleapis.com"
    }.freeze

    # Bedrock's runtime endpoint in a region.
    BEDROCK_BASE_URL = "https://bedrock-runtime.%<region>s.amazonaws.com"

    # azure_api: the protocol an Azure resource is spoken in.
    AZURE_APIS = { chat: :openai, responses: :responses }.freeze

    # The options only some apis take, and which.
    OWN_OPTIONS = { azure_api: %i[azure], api_version: %i[azure], project: %i[vertex], location: %i[vertex],
                    region: %i[bedrock] }.freeze

    # The credential each api takes (Credentials.for reads it): a key, a token source, or
    # AWS credentials (a Bedrock API key, api_key:, is a bearer token instead).
    # Vertex AI's credentials: is a service account key file.
    CREDENTIALS = { azure: %i[api_key access_token], vertex: %i[access_token credentials],
                    bedrock: %i[credentials api_key] }.freeze

    # An AWS region, or a Vertex AI location: a host name's label.
    LABEL = /\A[a-z0-9-]+\z/.freeze

    attr_reader :name, :api, :base_url, :layout, :api_version, :vertex, :region

    # Prefixes +message+ with the provider it is about: every ConfigurationError of a
    # provider's configuration says so the same way.
    # @raise [ConfigurationError]
    def self.refuse!(name, message)
      raise ConfigurationError, "provider #{name.inspect}: #{message}"
    end

    # @param name [Symbol] the provider entry's name
    # @param api [Symbol] one of APIS
    # @param options [Hash] the options of OWN_OPTIONS given (nil: not given)
    # @raise [ConfigurationError] an unknown api, an option it does not take or lacks, a bad base_url
    def initialize(name, api:, base_url:, **options)
      @name = name
      @api = known_api(api)
      check_own_options(options)
      @layout, @azure_api, @api_version, @vertex = host_parts(options)
      @region = bedrock_region(options[:region]) if @api == :bedrock
      @base_url = normalized_base_url(base_url.nil? ? default_base_url : base_url)
      @layout = :azure_foundry if @api == :azure && URI.parse(@base_url).path.end_with?("/models")
      refuse!("api_version: is missing (AI Foundry's /models takes one, such as \"2024-05-01-preview\")") if
        @layout == :azure_foundry && @api_version.nil?
      check_served
      freeze
    end

    # @param host_model [String] the model as the host names it
    # @return [Symbol] the protocol it is asked in (the engine's api)
    def protocol(host_model)
      case @api
      when :azure then AZURE_APIS.fetch(@azure_api)
      when :vertex then Host.__send__(:__vertex_api, host_model)
      else @api
      end
    end

    # @return [Array<Symbol>] the credentials the host takes: :api_key, :access_token,
    #   :credentials (AWS's)
    def credentials
      CREDENTIALS.fetch(@api, %i[api_key])
    end

    # @return [Boolean] a key given as api_key: goes as a bearer token (a Bedrock API key)
    def bearer_key?
      @api == :bedrock
    end

    # @param protocol [Symbol]
    # @return [String, nil] why this host serves no embeddings in +protocol+, nil when it does
    def embeddings_refusal(protocol)
      Host.__send__(:__refusal, @layout || :plain, protocol, true)
    end

    def inspect
      "#<#{self.class.name} #{@api}#{" #{@layout}" if @layout}>"
    end

    private

    def refuse!(message)
      Host.refuse!(@name, message)
    end

    def known_api(api)
      sym = api.respond_to?(:to_sym) ? api.to_sym : nil
      return sym if APIS.include?(sym)

      refuse!("unknown api #{api.inspect} (known: #{APIS.map(&:inspect).join(', ')})")
    end

    def check_own_options(options)
      options.each do |option, value|
        next if value.nil? || OWN_OPTIONS.fetch(option).include?(@api)

        refuse!("#{option}: is for api: #{OWN_OPTIONS.fetch(option).map(&:inspect).join(' or ')}, not #{@api.inspect}")
      end
    end

    # [layout, azure_api, api_version, vertex] of the api's options.
    def host_parts(options)
      case @api
      when :azure then azure_parts(options)
      when :vertex then [:vertex, nil, nil, vertex_parts(options)]
      else [nil, nil, nil, nil]
      end
    end

    # Azure's v1 paths, or with api_version a deployment's (or AI Foundry's, by its
    # base_url: see #initialize).
    def azure_parts(options)
      azure_api = options[:azure_api].nil? ? :chat : options[:azure_api]
      unless AZURE_APIS.key?(azure_api)
        refuse!("azure_api must be #{AZURE_APIS.keys.map(&:inspect).join(' or ')}, got #{azure_api.inspect}")
      end
      version = options[:api_version]
      return [:azure, azure_api, nil, nil] if version.nil?

      unless version.is_a?(String) && !version.strip.empty? && !version.match?(/[\s\0]/)
        refuse!("api_version must be a String such as \"2024-10-21\", got #{version.inspect}")
      end
      [:azure_deployment, azure_api, version.dup.freeze, nil]
    end

    def vertex_parts(options)
      project, location = options.values_at(:project, :location)
      refuse!("project: is missing (the Google Cloud project id)") if project.nil?
      refuse!("location: is missing (\"us-east5\", \"europe-west4\", \"global\", ...)") if location.nil?
      unless project.is_a?(String) && !project.empty? && !project.match?(%r{[\s\0/]})
        refuse!("project must be a Google Cloud project id, got #{project.inspect}")
      end
      unless location.is_a?(String) && Host.__send__(:__vertex_base_url, location)
        refuse!("location must be a Vertex AI location (a-z, 0-9 and -), got #{location.inspect}")
      end
      [project.dup.freeze, location.dup.freeze].freeze
    end

    def bedrock_region(region)
      refuse!("region: is missing (\"us-east-1\", \"eu-central-1\", ...)") if region.nil?
      refuse!("region must be an AWS region (a-z, 0-9 and -), got #{region.inspect}") unless
        region.is_a?(String) && region.match?(LABEL)

      region.dup.freeze
    end

    def default_base_url
      return Host.__send__(:__vertex_base_url, @vertex[1]) if @api == :vertex
      return format(BEDROCK_BASE_URL, region: @region) if @api == :bedrock

      DEFAULT_BASE_URLS.fetch(@api) do
        refuse!("base_url: is missing (Azure's is your resource's, \"https://NAME.openai.azure.com\", or AI " \
                "Foundry's, ending in /models)")
      end
    end

    # The one normalisation of a base_url (the engine appends the host's route and the
    # protocol's path to it as it is). Messages show it through ProviderConfig.shown_url: a
    # URL may carry a password.
    def normalized_base_url(url)
      refuse!("base_url must be a String, got #{url.class}") unless url.is_a?(String)
      uri = begin
        URI.parse(url)
      rescue URI::InvalidURIError
        nil
      end
      unless uri && %w[http https].include?(uri.scheme&.downcase) && uri.host && !uri.host.empty?
        refuse!("base_url must be an http:// or https:// URL, got #{shown(url)}")
      end
      refuse!("base_url must not carry a query or fragment, got #{shown(url)}") if uri.query || uri.fragment
      refuse!("base_url must not carry credentials, got #{shown(url)}") if uri.userinfo

      # A trailing slash would double the one the endpoint path starts with.
      url.sub(%r{/+\z}, "").freeze
    end

    def shown(url)
      ProviderConfig.shown_url(url).inspect
    end

    # A host that cannot serve the protocol asked of it is a configuration error, not a
    # request the core would refuse at every call (Azure's Responses API is on /openai/v1
    # only, AI Foundry's model inference speaks chat completions).
    def check_served
      return unless @api == :azure

      why = Host.__send__(:__refusal, @layout, AZURE_APIS.fetch(@azure_api), false)
      refuse!("azure_api: #{@azure_api.inspect}: #{why}") if why
    end
  end
end

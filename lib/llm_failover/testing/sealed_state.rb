# frozen_string_literal: true

require "json"
require "securerandom"

module LlmFailover
  module Testing
    class FakeProvider
      # The reasoning state a FakeProvider hands out for a client to send back next turn
      # (the Responses API's encrypted_content, Gemini's thoughtSignature): opaque to the
      # client, as the real hosts' is, yet readable here, so that a strict server refuses
      # what the real host would. It goes back only to the protocol and the lane that made
      # it, as the core sends it (lf_wire_reasoning_goes): another host cannot read it.
      module SealedState
        # What every piece of state this server made says first.
        MARK = "fake-sealed-state"
        # OpenAI's encrypted_content is a Fernet token: the Responses API's state looks like one.
        FERNET = "gAAAAB"
        # What a piece holds: the protocol and the lane it was made for, and whether it is
        # final (false: Responses' output_item.added placeholder, never to be sent back).
        Contents = Struct.new(:api, :lane, :final)

        module_function

        # @param api [Symbol] the protocol of the answer that carries it
        # @param lane [Symbol, nil] the lane the request came by
        # @param final [Boolean]
        # @param note [String] what it is about (a reasoning summary); no two pieces are equal
        # @return [String] base64, behind Fernet's look for the Responses API
        def issue(api:, lane:, final: true, note: "")
          body = [JSON.generate([MARK, api.to_s, lane.to_s, final ? true : false, note.to_s, SecureRandom.hex(4)])]
                 .pack("m0")
          api == :responses ? FERNET + body : body
        end

        # @return [Contents, nil] nil when this server did not make +value+
        def read(value)
          return nil unless value.is_a?(String)

          mark, api, lane, final = JSON.parse(value.delete_prefix(FERNET).unpack1("m"))
          mark == MARK ? Contents.new(api.to_sym, lane, final == true) : nil
        rescue ArgumentError, JSON::ParserError, TypeError, NoMethodError
          nil
        end

        # Whether +value+ may come back in a request of protocol +api+ by +lane+: this server
        # made it, final, for that protocol and lane.
        # @param api [Symbol]
        # @param lane [Symbol, nil]
        def returns_to?(value, api:, lane:)
          contents = read(value)
          !contents.nil? && contents.final && contents.api == api && contents.lane == lane.to_s
        end
      end
    end
  end
end

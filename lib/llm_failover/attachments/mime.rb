# frozen_string_literal: true

require "llm_failover/llm_failover" # the compiled extension

module LlmFailover
  class Attachment
    # The types an attachment may have, and the one reading of them from bytes (their
    # magic numbers) or from a URL's file extension.
    # @api private
    module Mime
      # Each type and its kind (:image, :document): the wire layer's list
      # (lf_wire_attachment_type), read once.
      KINDS = Attachment.__send__(:__kinds)

      EXTENSIONS = {
        ".png" => "image/png", ".jpg" => "image/jpeg", ".jpeg" => "image/jpeg", ".gif" => "image/gif",
        ".webp" => "image/webp", ".pdf" => "application/pdf"
      }.freeze

      module_function

      # @return [String, nil] the type the bytes are, nil when none of KINDS
      def sniff(bytes)
        head = bytes.byteslice(0, 16).b
        return "image/png" if head.start_with?("\x89PNG\r\n\x1A\n".b)
        return "image/jpeg" if head.start_with?("\xFF\xD8\xFF".b)
        return "image/gif" if head.start_with?("GIF87a", "GIF89a")
        return "image/webp" if head.start_with?("RIFF") && head.byteslice(8, 4) == "WEBP"
        return "application/pdf" if head.start_with?("%PDF-")

        nil
      end

      # @return [String, nil] the type a name's extension says
      def from_name(name)
        EXTENSIONS[File.extname(name.to_s.split(/[?#]/).first.to_s).downcase]
      end

      # A declared type ("image/png; charset=..." too) in the form KINDS uses.
      def normalize(type)
        type&.to_s&.split(";")&.first&.strip&.downcase
      end

      def kind(type)
        KINDS[type]
      end
    end
  end
end
